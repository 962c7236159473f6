#include <iostream>
#include <new>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/pcg/diagnostic.hpp"

namespace {

// A command that fails with --json still answers on stdout, so that a script reading it learns why.
int failed(const std::string& message, bool json) {
  std::cerr << message << "\n";
  if (json) std::cout << nlohmann::json{{"ok", false}, {"error", message}}.dump(2) << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Loom: verified graph substitutions on parallel computation graphs.\n"
      "Operators, parallelization forms, axioms and rules are written in .loom spec files;\n"
      "the bundled library lives in specs/ (override with $LOOM_SPECS)."};
  app.require_subcommand(1);
  int status = 0;
  loom::cli::add_check_command(app, status);
  loom::cli::add_show_command(app, status);
  loom::cli::add_simulate_command(app, status);
  loom::cli::add_import_command(app, status);
  loom::cli::add_apply_command(app, status);
  loom::cli::add_optimize_command(app, status);
  loom::cli::add_verify_command(app, status);
  loom::cli::add_generate_command(app, status);
  loom::cli::add_train_command(app, status);
  loom::cli::add_run_command(app, status);
  loom::cli::add_export_command(app, status);
  loom::cli::add_schedule_command(app, status);
  bool json = false;
  for (int i = 1; i < argc; ++i) json = json || std::string(argv[i]) == "--json";
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (json && e.get_exit_code() != 0) std::cout << nlohmann::json{{"ok", false}, {"error", e.what()}}.dump(2) << "\n";
    return app.exit(e);
  } catch (const loom::LoomError& e) {
    return failed(e.what(), json);
  } catch (const std::bad_alloc&) {
    return failed("loom: out of memory: the sizes this command was given need more memory than the machine has", json);
  } catch (const std::exception& e) {
    return failed(std::string("loom: ") + e.what(), json);
  }
  return status;
}
