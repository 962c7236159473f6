#include <iostream>
#include <memory>

#include "commands.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/models/onnx_export.hpp"
#include "loom/pcg/diagnostic.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/runtime/checkpoint.hpp"
#include "model_options.hpp"

namespace loom::cli {
namespace {

constexpr const char* kExportHelp =
    "Write a checkpoint's trained weights back into the ONNX file the model was imported from: each initializer a weight comes "
    "from gets the weight's values (transposed and scaled back where the import transposed or scaled it, as for a Gemm's transB "
    "and alpha), and everything else in the file stays as it was. Give the model as it was trained (--model with the same "
    "--dim, --batch and --import-rules). Weights the import computed from several of the file's values are reported and left "
    "as the file holds them.";

struct ExportOptions {
  ModelOptions model;
  std::vector<std::string> specs;
  std::string checkpoint;
  std::string out;
  bool quiet = false;
};

int run_export(const ExportOptions& opt) {
  if (!models::is_onnx_path(opt.model.model))
    throw LoomError("--model " + opt.model.model + ": loom export writes weights back into an ONNX file (a .onnx model)");
  const spec::Library library = spec::Library::load(spec::Library::paths_or_bundled(opt.specs));
  const models::ModelRequest request = opt.model.request(library);
  const models::OnnxExport exported =
      models::export_onnx_weights(opt.model.model, library, request.onnx, runtime::checkpoint_weights(opt.checkpoint));
  pcg::write_file_atomically(opt.out, exported.bytes);
  std::cout << "wrote " << opt.out << ": " << exported.written.size() << " initializer" << (exported.written.size() == 1 ? "" : "s")
            << " set from " << opt.checkpoint << "\n";
  for (const std::string& reason : exported.left_out) std::cout << "  left as the file holds it: " << reason << "\n";
  if (!opt.quiet)
    for (const std::string& name : exported.written) std::cout << "  " << name << "\n";
  return 0;
}

}  // namespace

void add_export_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<ExportOptions>();
  auto* cmd = app.add_subcommand("export", kExportHelp);
  add_model_options(*cmd, opt->model)->required();
  cmd->add_option("--checkpoint", opt->checkpoint, "a checkpoint of `loom train --checkpoint` of this model")->required();
  cmd->add_option("-o,--out", opt->out, "the ONNX file to write (written atomically)")->required();
  cmd->add_option("--specs", opt->specs, "spec files or directories (default: the bundled library)");
  cmd->add_flag("-q,--quiet", opt->quiet, "do not list the initializers written");
  cmd->callback([opt, &status] { status = run_export(*opt); });
}

}  // namespace loom::cli
