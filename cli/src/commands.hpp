#pragma once
#include <CLI/CLI.hpp>

namespace loom::cli {

// Each registers its subcommand and returns the exit status holder it sets when run.
void add_check_command(CLI::App& app, int& status);
void add_show_command(CLI::App& app, int& status);
void add_simulate_command(CLI::App& app, int& status);
void add_import_command(CLI::App& app, int& status);
void add_apply_command(CLI::App& app, int& status);
void add_optimize_command(CLI::App& app, int& status);
void add_verify_command(CLI::App& app, int& status);
void add_generate_command(CLI::App& app, int& status);
void add_train_command(CLI::App& app, int& status);
void add_run_command(CLI::App& app, int& status);
void add_export_command(CLI::App& app, int& status);
void add_schedule_command(CLI::App& app, int& status);

}  // namespace loom::cli
