#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <sstream>
#include <thread>

#include <stdio.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "loom/audit/plan_audit.hpp"
#include "loom/interpreter/library.hpp"
#include "loom/pcg/rule.hpp"
#include "loom/search/plan.hpp"
#include "loom/verifier/axiom_report.hpp"
#include "loom/verifier/axiom_set.hpp"
#include "loom/verifier/proof_record.hpp"
#include "loom/verifier/rule_loading.hpp"
#include "loom/verifier/verify.hpp"
#include "model_options.hpp"
#include "number_checks.hpp"
#include "plan_chain.hpp"
#include "progress_line.hpp"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using pcg::VerificationStatus;

struct VerifyCommandOptions {
  std::vector<std::string> inputs;
  std::vector<std::string> specs;
  int jobs = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  unsigned timeout_ms = 10000;
  std::string cache;
  bool no_cache = false;
  std::vector<std::string> without;
  bool axiom_report = false;
  std::string cores;  // "minimal" or "raw"; empty: minimal for .loom input, raw for a rule library
  std::string out;
  bool in_place = false;
  bool json = false;
  bool quiet = false;
  std::uint64_t seed = 1;
};

bool is_json(const std::string& path) { return fs::path(path).extension() == ".json"; }

std::string seconds_text(double s) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(s < 10 ? 2 : 1) << s << " s";
  return os.str();
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (const auto& i : items) out += (out.empty() ? "" : sep) + i;
  return out;
}

// Verification progress: the bar, the verdicts so far and the time taken.
class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : line_(enabled) {}
  void update(const verifier::VerifyProgress& p) {
    if (p.total == 0) return;
    const double done = static_cast<double>(p.done) / static_cast<double>(p.total);
    std::string text = ProgressLine::bar(done, 30) + " " + std::to_string(p.done) + "/" + std::to_string(p.total) + "  proved " +
                       std::to_string(p.proved) + "  refuted " + std::to_string(p.refuted) + "  unknown " + std::to_string(p.unknown);
    if (p.cached) text += "  (cached " + std::to_string(p.cached) + ")";
    line_.show("", text + "  " + seconds_text(p.seconds), done);
  }
  void finish() { line_.finish(); }

 private:
  ProgressLine line_;
};

void print_alive(std::ostream& os, const verifier::Obligation& ob, const verifier::Verdict& verdict) {
  const auto& v = verdict.verification;
  os << "----------------------------------------\n" << ob.text << "\n";
  switch (v.status) {
    case VerificationStatus::Proved: os << "proved (uses: " << (v.core.empty() ? "no axioms" : join(v.core, ", ")) << ")"; break;
    case VerificationStatus::Refuted: os << "refuted: the interpreter evaluates the two sides differently\n  " << v.counterexample; break;
    case VerificationStatus::Unknown: os << "unknown: " << v.reason; break;
    case VerificationStatus::Stale: os << "stale: " << v.reason; break;
  }
  os << "  [" << (verdict.cached ? "cached" : seconds_text(v.seconds)) << "]\n";
}

// Writes `text` to `path` through a temporary file, so a failure leaves any old file intact.
void write_file(const std::string& path, const std::string& text) {
  const std::string temp = path + ".tmp";
  {
    std::ofstream out(temp);
    if (!out || !(out << text)) throw LoomError(temp + ": cannot write");
  }
  std::error_code ec;
  fs::rename(temp, path, ec);
  if (ec) throw LoomError(path + ": cannot write: " + ec.message());
}

json report_json(const verifier::AxiomReport& report) {
  json uses = json::object(), needed = json::object();
  for (const auto& a : report.axioms) {
    uses[a.axiom] = a.proofs;
    if (!a.needed_by.empty()) needed[a.axiom] = a.needed_by;
  }
  return {{"uses", uses}, {"unused", report.unused()}, {"needed_by", needed}};
}

void print_report(std::ostream& os, const verifier::AxiomReport& report) {
  os << "----------------------------------------\naxiom usage (proofs whose unsat core contains the axiom):\n";
  std::size_t width = 0;
  for (const auto& a : report.axioms) width = std::max(width, a.axiom.size());
  for (const auto& a : report.axioms)
    if (a.proofs) os << "  " << std::left << std::setw(static_cast<int>(width)) << a.axiom << "  " << a.proofs << "\n";
  const auto unused = report.unused();
  os << "unused axioms (" << unused.size() << "): " << (unused.empty() ? "none" : join(unused, ", ")) << "\n";
  os << "rules that become unprovable when one axiom is removed:\n";
  bool any = false;
  for (const auto& a : report.axioms)
    if (!a.needed_by.empty()) {
      os << "  without " << a.axiom << ": " << join(a.needed_by, ", ") << "\n";
      any = true;
    }
  if (!any) os << "  none: every proof has an alternative\n";
}

// `loom verify PLAN.json`: the plan's soundness chain, audited and printed.
int run_plan_audit(const VerifyCommandOptions& opt, const std::string& cache_path) {
  if (!opt.out.empty() || opt.in_place) throw LoomError("--out and --in-place apply to rules, not to a plan");
  const spec::Library library = spec::Library::load(ModelOptions{}.spec_paths(opt.specs, opt.inputs[0]));
  const search::Plan plan = search::load_plan(opt.inputs[0], library);
  const audit::PlanAudit result = audit_with_cache(plan, library, cache_path, true, opt.timeout_ms);
  if (opt.json) {
    json out = audit::audit_to_json(result);
    out["plan"] = opt.inputs[0];
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << opt.inputs[0] << ": " << (plan.model.empty() ? "plan" : plan.model) << " on " << plan.machine.name << ", "
              << plan.substitutions.size() << (plan.substitutions.size() == 1 ? " substitution" : " substitutions") << "\n"
              << audit::audit_text(result);
  }
  return result.holds() ? 0 : 2;
}

// Reads `path` as JSON; errors name the file.
json read_json_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw LoomError(path + ": cannot open file");
  try {
    return json::parse(in);
  } catch (const json::parse_error& e) {
    throw LoomError(path + ": not valid JSON: " + e.what());
  }
}

// The rules declared in the .loom files being verified, as a rule library: each built as graphs
// and carrying its spec text, in the order of `obligations`. `specs` are the user's --specs
// (none: the bundled library).
pcg::RuleLibrary library_of_declarations(const spec::Library& library, const std::vector<verifier::Obligation>& obligations,
                                         const std::vector<std::string>& specs) {
  std::map<std::string, const spec::EquationDecl*> declared;  // rule names are unique in a library
  for (const spec::EquationDecl* r : library.rules()) declared.emplace(r->name, r);
  pcg::RuleLibrary out;
  out.specs = specs;
  for (const verifier::Obligation& ob : obligations) out.rules.push_back(verifier::rule_of_declaration(library, *declared.at(ob.name)));
  out.summary["source"] = "loom verify of rule declarations";
  return out;
}

int run_verify(const VerifyCommandOptions& opt) {
  const bool json_input = opt.inputs.size() == 1 && is_json(opt.inputs[0]);
  for (const auto& in : opt.inputs)
    if (is_json(in) && !json_input) throw LoomError(in + ": verify one rule library or plan (.json) at a time, without .loom files");
  if (opt.in_place && !json_input) throw LoomError("--in-place applies to a rule library (.json) input; give -o for .loom files");
  if (!opt.out.empty() && opt.in_place) throw LoomError("give either --out or --in-place, not both");
  const bool show_progress = !opt.quiet && !opt.json;
  const std::string cache_path = opt.no_cache ? "" : (opt.cache.empty() ? verifier::ResultCache::default_path() : opt.cache);

  // The spec library, and the rules to verify.
  std::vector<std::string> paths = spec::Library::paths_or_bundled(opt.specs);
  std::optional<pcg::RuleLibrary> rule_library;
  json input_json;
  if (json_input) {
    input_json = read_json_file(opt.inputs[0]);
    if (input_json.is_object() && input_json.value("format", "") == "loom-plan") return run_plan_audit(opt, cache_path);
  } else {
    paths.insert(paths.end(), opt.inputs.begin(), opt.inputs.end());
  }
  spec::Library library = spec::Library::load(paths);
  std::vector<verifier::Obligation> obligations;
  if (json_input) {
    try {
      rule_library = pcg::rule_library_from_json(input_json, library);
    } catch (const LoomError& e) {
      throw LoomError(opt.inputs[0] + ": " + e.what());
    }
    input_json = nullptr;  // large libraries: the parsed file is not needed any more
    obligations = verifier::obligations_from_rule_library(*rule_library, library, opt.inputs[0]);
  } else {
    obligations = verifier::obligations_from_library(library, opt.inputs);
    if (!opt.out.empty()) rule_library = library_of_declarations(library, obligations, opt.specs);
  }
  if (obligations.empty() && !opt.quiet) std::cerr << "note: there are no rules to verify\n";

  // Every axiom is checked by the interpreter before any proof uses it.
  if (show_progress) std::cerr << "checking " << library.axioms().size() << " axioms with the interpreter...\n";
  verifier::AxiomSet axioms;
  try {
    axioms = verifier::prepare_axioms(library);
  } catch (const LoomError& e) {
    std::cerr << e.what() << "\nrefusing to verify: the library has unsound axioms\n";
    return 1;
  }
  for (const auto& name : opt.without)
    if (!axioms.find(name)) throw LoomError("--without " + name + ": the library has no axiom of that name");

  // The cache: read now, written once the run is over.
  verifier::ResultCache cache = cache_path.empty() ? verifier::ResultCache{} : verifier::ResultCache::load(cache_path);

  verifier::VerifyOptions vo;
  vo.jobs = opt.jobs;
  vo.timeout_ms = opt.timeout_ms;
  vo.without = {opt.without.begin(), opt.without.end()};
  vo.minimal_cores = opt.cores.empty() ? !json_input : opt.cores == "minimal";
  vo.counterexamples.seed = opt.seed;
  vo.cache = cache_path.empty() ? nullptr : &cache;
  ProgressBar bar(show_progress);
  vo.progress = [&bar](const verifier::VerifyProgress& p) { bar.update(p); };
  verifier::VerifyReport report = verifier::verify(library, axioms, obligations, vo);
  bar.finish();
  if (!cache_path.empty()) cache.save(cache_path);

  std::optional<verifier::AxiomReport> usage;
  if (opt.axiom_report) {
    if (show_progress) std::cerr << "axiom report: proving each rule again without each axiom its proof used...\n";
    ProgressBar retries(show_progress);
    vo.progress = [&retries](const verifier::VerifyProgress& p) { retries.update(p); };
    usage = verifier::axiom_report(library, axioms, obligations, report, vo);
    retries.finish();
  }

  // The annotated rule library.
  std::string written;
  const std::size_t proved = report.count(VerificationStatus::Proved), refuted = report.count(VerificationStatus::Refuted),
                    unknown = report.count(VerificationStatus::Unknown);
  if (rule_library) {
    for (std::size_t i = 0; i < obligations.size(); ++i) {
      pcg::Rule& rule = rule_library->rules[i];
      rule.verification = report.verdicts[i].verification;
      verifier::bind_record(*rule.verification, rule, library, axioms);
    }
    rule_library->summary["verification"] = {{"proved", proved},
                                             {"refuted", refuted},
                                             {"unknown", unknown},
                                             {"seconds", report.seconds},
                                             {"jobs", opt.jobs},
                                             {"timeout_ms", opt.timeout_ms},
                                             {"axioms", axioms.axioms.size() - opt.without.size()}};
    written = opt.in_place ? opt.inputs[0]
              : !opt.out.empty()
                  ? opt.out
                  : (fs::path(opt.inputs[0]).parent_path() / (fs::path(opt.inputs[0]).stem().string() + ".verified.json")).string();
    write_file(written, pcg::rule_library_to_json(*rule_library).dump(2) + "\n");
  }

  if (opt.json) {
    json results = json::array();
    for (std::size_t i = 0; i < obligations.size(); ++i) {
      const auto& v = report.verdicts[i].verification;
      json r = {{"rule", obligations[i].name},
                {"where", obligations[i].where()},
                {"status", pcg::status_name(v.status)},
                {"seconds", v.seconds},
                {"cached", report.verdicts[i].cached}};
      if (v.status == VerificationStatus::Proved) r["core"] = v.core;
      if (!v.counterexample.empty()) r["counterexample"] = v.counterexample;
      if (!v.reason.empty()) r["reason"] = v.reason;
      results.push_back(std::move(r));
    }
    json unusable = json::array();
    for (const auto& [name, why] : report.unusable_axioms) unusable.push_back({{"axiom", name}, {"reason", why}});
    std::size_t cached = 0;
    for (const auto& v : report.verdicts) cached += v.cached;
    json summary = {{"rules", obligations.size()},
                    {"proved", proved},
                    {"refuted", refuted},
                    {"unknown", unknown},
                    {"cached", cached},
                    {"seconds", report.seconds},
                    {"jobs", opt.jobs},
                    {"timeout_ms", opt.timeout_ms},
                    {"axioms", axioms.axioms.size() - opt.without.size()},
                    {"unusable_axioms", unusable},
                    {"results", results}};
    if (!written.empty()) summary["output"] = written;
    if (usage) summary["axiom_report"] = report_json(*usage);
    std::cout << summary.dump(2) << "\n";
  } else {
    for (std::size_t i = 0; i < obligations.size(); ++i)
      if (!json_input || report.verdicts[i].verification.status != VerificationStatus::Proved)
        print_alive(std::cout, obligations[i], report.verdicts[i]);
    if (usage) print_report(std::cout, *usage);
    std::size_t cached = 0;
    for (const auto& v : report.verdicts) cached += v.cached;
    std::cout << "----------------------------------------\n"
              << obligations.size() << " rules: " << proved << " proved, " << refuted << " refuted, " << unknown << " unknown in "
              << seconds_text(report.seconds) << " (" << opt.jobs << " jobs, " << cached << " from the cache)\n";
    if (!written.empty()) std::cout << "annotated rule library written to " << written << "\n";
    if (!opt.quiet && !report.unusable_axioms.empty()) {
      std::vector<std::string> names;
      for (const auto& unusable : report.unusable_axioms) names.push_back(unusable.first);
      std::cerr << "note: " << names.size() << " axioms give Z3 nothing to use (the reasons are in --json): " << join(names, ", ") << "\n";
    }
  }
  return proved == obligations.size() ? 0 : 2;
}

}  // namespace

void add_verify_command(CLI::App& app, int& status) {
  auto opt = std::make_shared<VerifyCommandOptions>();
  auto* cmd = app.add_subcommand("verify",
                                 "Prove rewrite rules from the library's axioms with Z3, or audit a plan's soundness chain.\n"
                                 "INPUT is .loom files (their `rule` declarations; default: the bundled specs' rules), one rule\n"
                                 "library (.json, as `loom generate` writes), or one plan (.json, as `loom optimize -o` writes).\n"
                                 "Every axiom is first checked by the interpreter; a library with an unsound axiom is refused. Each\n"
                                 "rule comes out `proved` (with the axioms its proof used), `refuted` (with a counterexample the\n"
                                 "interpreter evaluated) or `unknown` (timeout, or no proof and no counterexample found). A proof\n"
                                 "record is bound to the rule's content hash, each axiom's hash and numeric check, and Loom's\n"
                                 "version; a record that no longer matches is stale and never counts as proved. A rule library is\n"
                                 "written back annotated, by default to NAME.verified.json next to the input; .loom rules are\n"
                                 "written as a verified library with -o. A plan is audited: every substitution's proof checked\n"
                                 "against its content (proved again where no valid record exists) and the substitutions replayed\n"
                                 "from the plan's source graph. Exit status: 0 when every rule is proved (the plan's chain holds),\n"
                                 "2 when some are refuted, unknown or stale (the chain is broken), 1 on bad input or unsound axioms.");
  cmd->add_option("inputs", opt->inputs, ".loom files with rules, one rule library .json, or one plan .json");
  cmd->add_option("--specs", opt->specs, "spec files or directories with the ops and axioms (default: the bundled specs/)");
  cmd->add_option("-j,--jobs", opt->jobs, "threads, each with its own Z3 context (default: the number of cores)")->check(positive_number());
  cmd->add_option("--timeout-ms", opt->timeout_ms, "Z3 time limit per rule in milliseconds (0: none)")->default_val(10000);
  cmd->add_option("--cache", opt->cache, "result cache file (default: $XDG_CACHE_HOME/loom/verify-cache.json)");
  cmd->add_flag("--no-cache", opt->no_cache, "neither read nor write the result cache");
  cmd->add_option("--without", opt->without, "leave these axioms out of every proof");
  cmd->add_option("--cores", opt->cores,
                  "minimal: shrink each proof's unsat core until every axiom in it is needed (about twice the time); "
                  "raw: the core as Z3 reports it (default: minimal for .loom input, raw for a rule library)")
      ->check(CLI::IsMember({"minimal", "raw"}));
  cmd->add_flag("--axiom-report", opt->axiom_report,
                "report how many proofs use each axiom, the unused axioms, and the rules that become unprovable "
                "when one axiom is removed");
  cmd->add_option(
      "-o,--out", opt->out,
      "where to write the annotated rule library (default for a library: NAME.verified.json; .loom rules are written only with -o)");
  cmd->add_flag("--in-place", opt->in_place, "overwrite the input rule library with the annotated one");
  cmd->add_flag("--json", opt->json, "print a JSON summary (rules, proved, refuted, unknown, seconds, results, ...)");
  cmd->add_flag("-q,--quiet", opt->quiet, "no progress output");
  cmd->add_option("--seed", opt->seed, "random seed of the counterexample search")->default_val(1);
  cmd->callback([opt, &status] { status = run_verify(*opt); });
}

}  // namespace loom::cli
