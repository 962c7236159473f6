#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/interpreter/input_roles.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/pcg/file_io.hpp"
#include "loom/superopt/generator.hpp"
#include "number_checks.hpp"
#include "output_paths.hpp"
#include "progress_line.hpp"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;

struct GenerateCliOptions {
  std::vector<std::string> specs;
  std::string ops, parallel, degrees, inputs, attr_values;
  std::vector<std::string> attr_domains;
  superopt::GeneratorOptions generator;
  std::string out = "rules.json";
  std::string out_spec;
  bool json = false;
  bool quiet = false;
};

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream in(text);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    if (!item.empty()) out.push_back(item);
  }
  return out;
}

std::vector<std::int64_t> int_list(const std::string& text, const std::string& option) {
  std::vector<std::int64_t> out;
  for (const auto& item : split_list(text)) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != item.size()) throw LoomError(option + ": '" + item + "' is not an integer");
    out.push_back(v);
  }
  return out;
}

// `stage [#####-----] done/total`.
class ProgressBar {
 public:
  void operator()(const std::string& stage, std::size_t done, std::size_t total) {
    const double share = total ? static_cast<double>(done) / static_cast<double>(total) : 1.0;
    const std::string padded = stage + std::string(stage.size() < 20 ? 20 - stage.size() : 1, ' ');
    line_.show(padded, ProgressLine::bar(share, 30) + " " + std::to_string(done) + "/" + std::to_string(total), share);
  }
  void finish() { line_.finish(); }

 private:
  ProgressLine line_;
};

void print_summary(const nlohmann::json& s, const std::string& out, const std::string& out_spec) {
  const auto& by_size = s["graphs_by_size"];
  std::cout << "enumerated " << s["graphs"] << " graphs (";
  for (std::size_t n = 1; n < by_size.size(); ++n)
    std::cout << (n > 1 ? ", " : "") << by_size[n] << " of " << n << " op" << (n > 1 ? "s" : "");
  std::cout << "); " << s["candidate_graphs"] << " single-output graphs in " << s["buckets"] << " shared fingerprint buckets\n";
  std::cout << "candidates: " << s["candidates"];
  for (const auto& p : s["pruning"]) {
    std::cout << "; " << p["step"].get<std::string>() << ": ";
    if (p["enabled"].get<bool>())
      std::cout << "-" << p["removed"] << " -> " << p["after"];
    else
      std::cout << "off";
  }
  std::cout << "\n";
  const auto& c = s["numeric_check"];
  std::cout << "numeric check: " << c["checked"] << " checked, " << c["passed"] << " passed, " << c["fingerprint_collisions"]
            << " fingerprint collisions, " << c["example_sizes_only"] << " held only at the example sizes\n";
  const auto& k = s["by_category"];
  std::cout << "rules: " << s["rules"] << " (" << k["algebraic"] << " algebraic, " << k["parallel"] << " parallel, " << k["hybrid"]
            << " hybrid) -> " << out << ", " << out_spec << "\n";
  std::printf("time: %.2f s, peak memory %.0f MiB\n", s["seconds"].get<double>(), s["peak_memory_mib"].get<double>());
}

int run_generate(GenerateCliOptions& opt) {
  auto& g = opt.generator;
  g.ops = opt.ops == "all" ? std::vector<std::string>{} : split_list(opt.ops);
  g.parallel = opt.parallel == "none" ? std::vector<std::string>{} : split_list(opt.parallel);
  g.degrees = int_list(opt.degrees, "--degree");
  if (!opt.attr_values.empty()) g.free_attr_values = int_list(opt.attr_values, "--attr-values");
  if (!opt.inputs.empty()) g.inputs = superopt::parse_inputs(opt.inputs);
  for (const auto& item : opt.attr_domains) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) throw LoomError("--attr: expected NAME=V1,V2,..., got '" + item + "'");
    g.attr_domains[item.substr(0, eq)] = int_list(item.substr(eq + 1), "--attr " + item.substr(0, eq));
    if (g.attr_domains[item.substr(0, eq)].empty()) throw LoomError("--attr: no values given for '" + item.substr(0, eq) + "'");
  }
  if (opt.out_spec.empty()) opt.out_spec = fs::path(opt.out).replace_extension(".loom").string();
  if (opt.out_spec == opt.out) throw LoomError("--out-spec: give a different file than --out");
  require_writable_directory(opt.out, "--out");
  require_writable_directory(opt.out_spec, "--out-spec");

  const auto paths = spec::Library::paths_or_bundled(opt.specs);
  const spec::Library library = spec::Library::load(paths);
  if (opt.ops == "all")
    for (const auto* op : library.ops())
      if (!spec::detaches_gradient(*op)) g.ops.push_back(op->name);

  ProgressBar bar;
  superopt::ProgressFn progress;
  const bool show_progress = !opt.json && !opt.quiet;
  if (show_progress) progress = [&bar](const std::string& stage, std::size_t done, std::size_t total) { bar(stage, done, total); };
  superopt::GenerateResult result = superopt::generate(library, g, progress);
  if (show_progress) bar.finish();

  fs::path spec_dir = fs::path(opt.out_spec).parent_path();
  pcg::write_file_atomically(opt.out, pcg::rule_library_to_json(result.rules).dump() + "\n");
  pcg::write_file_atomically(opt.out_spec, superopt::rules_spec_text(library, result, spec_dir.empty() ? "." : spec_dir.string()));
  result.summary["out"] = opt.out;
  result.summary["out_spec"] = opt.out_spec;
  if (opt.json)
    std::cout << result.summary.dump(2) << "\n";
  else
    print_summary(result.summary, opt.out, opt.out_spec);
  return 0;
}

}  // namespace

void add_generate_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<GenerateCliOptions>();
  auto* cmd = app.add_subcommand(
      "generate",
      "Generate candidate substitutions (Unity section 4): enumerate every well-typed PCG of up to --max-ops operators over the "
      "chosen ops and parallel forms of the spec library, fingerprint each on fixed random inputs (exact modular values and "
      "output degrees), pair graphs with equal fingerprints, prune redundant pairs as TASO does, re-check every candidate in "
      "double precision, and write the rule library as JSON (--out) and in spec syntax (--out-spec).");
  cmd->add_option("--specs", opt->specs, "spec files or directories the operators come from (default: bundled specs/)");
  cmd->add_option("--ops", opt->ops, "comma-separated compute ops to enumerate, or 'all'")
      ->default_str("matmul,relu,ewadd,ewmul,concat,split");
  cmd->add_option("--parallel", opt->parallel, "comma-separated parallel and fused forms to enumerate, or 'none'")
      ->default_str("partition,combine,replicate,reduce");
  cmd->add_option("--max-ops", opt->generator.max_ops, "operators per graph, i.e. per side of a rule (1 to 6)")->default_val(3);
  cmd->add_option("--degree", opt->degrees, "comma-separated parallel degrees: the values of every `degree` attribute")->default_str("2");
  cmd->add_option("--inputs", opt->inputs,
                  "graph inputs as spec binders with literal sizes, e.g. 'x: [4, 6], z: [4, 6] {V: 2}' (default: x, y, u: [2d, 3d]; "
                  "w, v: [3d, 5d]; z: [2d, 3d] {V: d}; t: [2d, 3d] {D: [1, d]} for the first degree d)");
  cmd->add_option("--attr", opt->attr_domains,
                  "NAME=V1,V2,...: the values every attribute called NAME takes (within its declared domain), e.g. "
                  "--attr stride_h=1 --attr kh=1,3; repeatable")
      ->take_all();
  cmd->add_option("--attr-values", opt->attr_values,
                  "comma-separated values for attributes declared without a domain, e.g. split positions (default: the input sizes)");
  cmd->add_option("--fingerprint-bits", opt->generator.fingerprint_bits,
                  "bits of each fingerprint kept (1 to 64); fewer force collisions, which the numeric check must catch")
      ->default_val(64);
  cmd->add_option("-j,--jobs", opt->generator.jobs, "worker threads")
      ->default_val(std::max(1u, std::thread::hardware_concurrency()))
      ->check(positive_number());
  cmd->add_option("--seed", opt->generator.seed, "seed of the fingerprint inputs and of the numeric checks")->default_val(1);
  cmd->add_flag("--two-outputs", opt->generator.two_outputs,
                "also enumerate graphs with two outputs, so that rules with two outputs come out: merges of operators "
                "reading one input into one operator and a split, such as (matmul(x, a), matmul(x, b)) => "
                "(split(matmul(x, concat(a, b))).0, ...)");
  cmd->add_flag("--prune-implied", opt->generator.prune_implied,
                "also drop pairs implied by smaller ones: a side with an inner tensor that a smaller graph computes, or sides "
                "already connected through smaller kept pairs of their bucket");
  cmd->add_option("--check-instances", opt->generator.check_instances, "random instances of each double-precision check")
      ->default_val(4)
      ->check(positive_number());
  cmd->add_option("--check-max-dim", opt->generator.check_max_dim, "largest size drawn by the check at random sizes")
      ->default_val(8)
      ->check(positive_number());
  cmd->add_option("--id-prefix", opt->generator.id_prefix,
                  "what the rules' ids start with, before their number: libraries generated apart keep apart ids when "
                  "loaded together")
      ->default_val("g")
      ->check(CLI::Validator(
          [](const std::string& prefix) -> std::string {
            // Not ending in a digit, so that no id of one prefix reads as another prefix's (g1 + 0001 = g + 10001).
            const bool name =
                !prefix.empty() && std::isalpha(static_cast<unsigned char>(prefix[0])) &&
                !std::isdigit(static_cast<unsigned char>(prefix.back())) &&
                std::all_of(prefix.begin(), prefix.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
            return name ? "" : "'" + prefix + "' is not a name that starts with a letter and does not end in a digit";
          },
          "NAME"));
  cmd->add_option("-o,--out", opt->out, "rule library JSON (format loom-rules)")->default_val("rules.json");
  cmd->add_option("--out-spec", opt->out_spec, "the same rules in spec syntax (default: --out with extension .loom)");
  cmd->add_flag("--json", opt->json, "print the summary as JSON (graphs, candidates, pruning, rules, by_category, seconds, ...)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  opt->ops = "matmul,relu,ewadd,ewmul,concat,split";
  opt->parallel = "partition,combine,replicate,reduce";
  opt->degrees = "2";
  cmd->callback([opt, &status] { status = run_generate(*opt); });
}

}  // namespace loom::cli
