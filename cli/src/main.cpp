#include <iostream>
#include <new>

#include "commands.hpp"
#include "loom/pcg/diagnostic.hpp"

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
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const loom::LoomError& e) {
    std::cerr << e.what() << "\n";
    return 1;
  } catch (const std::bad_alloc&) {
    std::cerr << "loom: out of memory: the sizes this command was given need more memory than the machine has\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "loom: " << e.what() << "\n";
    return 1;
  }
  return status;
}
