#include "rules/import/load_rules.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <sstream>

namespace teq {

std::string_view format_name(RuleFileFormat format) {
  switch (format) {
    case RuleFileFormat::Auto: return "auto";
    case RuleFileFormat::Json: return "json";
    case RuleFileFormat::TensatSingle: return "tensat";
    case RuleFileFormat::TensatMulti: return "tensat-multi";
    case RuleFileFormat::TasoPb: return "taso-pb";
  }
  return "?";
}

RuleFileFormat detect_rule_format(const std::filesystem::path& path, std::string_view content) {
  size_t first = content.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos) throw CorpusError(path.string() + ": empty file, no rules");
  if (first != std::string_view::npos && content[first] == '{') return RuleFileFormat::Json;
  // Protobuf is binary: text rule files never hold control bytes other than whitespace.
  bool binary = std::any_of(content.begin(), content.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return u < 0x20 && c != '\n' && c != '\r' && c != '\t';
  });
  if (binary || path.extension() == ".pb") return RuleFileFormat::TasoPb;
  if (content.find("=>") != std::string_view::npos)
    return path.filename().string().find("multi") != std::string::npos ? RuleFileFormat::TensatMulti
                                                                       : RuleFileFormat::TensatSingle;
  throw CorpusError(path.string() +
                    ": unrecognized rule format (expected a JSON corpus, Tensat 'lhs=>rhs' lines or a TASO .pb)");
}

namespace {

ImportResult load_detected(const std::filesystem::path& path, const LoadRulesOptions& options, RuleFileFormat& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CorpusError(path.string() + ": cannot open file");
  std::stringstream buf;
  buf << in.rdbuf();
  const std::string content = buf.str();
  format = options.format == RuleFileFormat::Auto ? detect_rule_format(path, content) : options.format;
  const std::string name = path.filename().string();
  switch (format) {
    case RuleFileFormat::Json: {
      ImportResult r;
      r.corpus = parse_corpus(content, path.string());
      r.total = r.corpus.rules.size();
      return r;
    }
    case RuleFileFormat::TensatSingle: return import_tensat_rules(content, "", name);
    case RuleFileFormat::TensatMulti: return import_tensat_rules("", content, name);
    case RuleFileFormat::TasoPb: return import_taso_pb(path);
    case RuleFileFormat::Auto: break;
  }
  throw CorpusError(path.string() + ": no rule format given");
}

}  // namespace

ImportResult load_rules_file(const std::filesystem::path& path, const LoadRulesOptions& options) {
  RuleFileFormat format = RuleFileFormat::Auto;
  return load_detected(path, options, format);
}

size_t RuleSet::skipped() const {
  size_t n = 0;
  for (const RuleFile& f : files) n += f.rules.skipped.size();
  return n;
}

RuleSet load_rule_set(const std::vector<std::filesystem::path>& paths, const LoadRulesOptions& options) {
  RuleSet set;
  std::set<std::string> ids;
  for (const std::filesystem::path& path : paths) {
    RuleFile file;
    file.path = path;
    try {
      file.rules = load_detected(path, options, file.format);
    } catch (const std::exception& e) {
      const std::string what = e.what();  // JSON and pattern parse errors do not always name the file
      if (what.starts_with(path.string())) throw;
      throw CorpusError(path.string() + ": " + what);
    }
    if (set.files.empty()) set.corpus.generator = file.rules.corpus.generator;
    const std::vector<Rule>& rules = file.rules.corpus.rules;
    for (size_t i = 0; i < rules.size(); ++i) {
      Rule rule = rules[i];
      if (!ids.insert(rule.id).second) {
        rule.id = path.stem().string() + "/" + rule.id;
        ids.insert(rule.id);
      }
      set.corpus.rules.push_back(std::move(rule));
      set.origin.push_back({set.files.size(), i});
    }
    set.files.push_back(std::move(file));
  }
  return set;
}

}  // namespace teq
