// LayerRules: parsing, ordering and matching of the per-layer rules of a QAT recipe.
#include "quant/modules/layer_rules.h"

#include <fnmatch.h>

#include <algorithm>
#include <limits>

#include "core/error.h"

namespace qgrad::quant {

using json = nlohmann::json;

namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw ValueError("quant recipe: " + msg);
}

bool is_position(const std::string& p) {
  return p == "@first" || p == "@last";
}

bool has_wildcard(const std::string& p) {
  return p.find_first_of("*?[") != std::string::npos;
}

std::size_t literal_count(const std::string& p) {
  return static_cast<std::size_t>(
      std::count_if(p.begin(), p.end(), [](char c) { return c != '*' && c != '?'; }));
}

void check_pattern(const json& p, const std::string& where) {
  if (!p.is_string() || p.get<std::string>().empty())
    fail("\"" + where + "\" must be a non-empty module name pattern, got a JSON " +
         std::string(p.type_name()));
  const std::string s = p.get<std::string>();
  // fnmatch reads a C string: "conv\0x" would match what "conv" matches. No module name holds a
  // NUL, so such a pattern is a mistake; the message shows it as \u0000.
  if (s.find('\0') != std::string::npos) {
    std::string shown;
    for (char c : where) shown += c == '\0' ? std::string("\\u0000") : std::string(1, c);
    fail("\"" + shown + "\" contains a NUL character, which no module name has");
  }
  if (s[0] == '@' && !is_position(s))
    fail("\"" + where + "\" is \"" + s + "\"; the only '@' selectors are \"@first\" and \"@last\"");
}

// The "weight" / "input" part of a rule: each an object (the family's settings) or null, at
// least one given.
void read_settings(LayerRules::Rule& r, const json& rule,
                   const std::vector<std::string>& extra_keys, QuantFamily family) {
  const std::string& label = r.label;
  if (rule.is_null()) {
    r.weight.given = r.input.given = true;
    return;
  }
  if (!rule.is_object())
    fail("\"" + label +
         "\" must be an object with \"weight\" and/or \"input\", or null, got a JSON " +
         std::string(rule.type_name()));
  for (auto it = rule.begin(); it != rule.end(); ++it) {
    const std::string& k = it.key();
    if (std::find(extra_keys.begin(), extra_keys.end(), k) != extra_keys.end()) continue;
    if (k != "weight" && k != "input") {
      std::string expected = "\"weight\", \"input\"";
      for (const std::string& e : extra_keys) expected += ", \"" + e + "\"";
      fail("unknown key \"" + label + "." + k + "\" (expected one of: " + expected + ")");
    }
    if (!it.value().is_null() && !it.value().is_object())
      fail("\"" + label + "." + k + "\" must be an object or null, got a JSON " +
           std::string(it.value().type_name()));
    const QuantRole role = k == "weight" ? QuantRole::Weight : QuantRole::Input;
    LayerRules::RoleOverride& o = role == QuantRole::Weight ? r.weight : r.input;
    o.given = true;
    if (!it.value().is_null())
      o.settings = parse_quantizer_settings(family, it.value(), role, label + "." + k);
  }
  if (!r.weight.given && !r.input.given)
    fail("\"" + label + "\" sets neither \"weight\" nor \"input\" (null keeps the layer float)");
}

void finish(LayerRules::Rule& r) {
  r.exact = std::none_of(r.patterns.begin(), r.patterns.end(), has_wildcard);
  r.literals = std::numeric_limits<std::size_t>::max();
  for (const std::string& p : r.patterns)
    r.literals = std::min(r.literals, is_position(p) ? 0 : literal_count(p));
}

bool same_rank(const LayerRules::Rule& a, const LayerRules::Rule& b) {
  return a.exact == b.exact && (a.exact || a.literals == b.literals);
}

}  // namespace

bool layer_pattern_matches(const std::string& pattern, const std::string& name, LayerPosition pos) {
  if (pattern == "@first") return pos.first;
  if (pattern == "@last") return pos.last;
  // No FNM_PATHNAME / FNM_PERIOD: '*' spans dots, so "layer3.*" reaches nested layers.
  return fnmatch(pattern.c_str(), name.c_str(), 0) == 0;
}

LayerRules LayerRules::from_json(const json& layers, QuantFamily family) {
  LayerRules out;
  if (layers.is_null()) return out;
  if (layers.is_array()) {
    out.ordered_ = true;
    for (std::size_t i = 0; i < layers.size(); ++i) {
      const std::string label = "layers[" + std::to_string(i) + "]";
      const json& item = layers[i];
      if (!item.is_object() || !item.contains("match"))
        fail("\"" + label + "\" must be an object with \"match\" (a pattern or a list of them)");
      Rule r;
      r.label = label;
      const json& m = item.at("match");
      if (m.is_array()) {
        if (m.empty()) fail("\"" + label + ".match\" must not be an empty list");
        for (std::size_t k = 0; k < m.size(); ++k) {
          check_pattern(m[k], label + ".match[" + std::to_string(k) + "]");
          r.patterns.push_back(m[k].get<std::string>());
        }
      } else {
        check_pattern(m, label + ".match");
        r.patterns.push_back(m.get<std::string>());
      }
      read_settings(r, item, {"match"}, family);
      finish(r);
      out.rules_.push_back(std::move(r));
    }
    return out;
  }
  if (!layers.is_object())
    fail(
        "\"layers\" must be an object {\"pattern\": {...}} or a list of {\"match\": ...} rules, "
        "got a JSON " +
        std::string(layers.type_name()));
  for (auto it = layers.begin(); it != layers.end(); ++it) {
    Rule r;
    r.label = "layers[" + it.key() + "]";
    check_pattern(json(it.key()), "layers key " + it.key());
    r.patterns = {it.key()};
    read_settings(r, it.value(), {}, family);
    finish(r);
    out.rules_.push_back(std::move(r));
  }
  // Least specific first, so that the most specific rule is applied last and wins.
  std::stable_sort(out.rules_.begin(), out.rules_.end(), [](const Rule& a, const Rule& b) {
    if (a.exact != b.exact) return !a.exact;
    return !a.exact && a.literals < b.literals;
  });
  return out;
}

json LayerRules::to_json() const {
  json list = json::array();
  for (const Rule& r : rules_) {
    json item = json::object();
    for (const QuantRole role : {QuantRole::Weight, QuantRole::Input}) {
      const RoleOverride& o = r.role(role);
      if (o.given)
        item[quant_role_name(role)] = o.settings ? quantizer_settings_json(*o.settings) : json();
    }
    item["match"] = r.patterns.size() == 1 ? json(r.patterns[0]) : json(r.patterns);
    list.push_back(std::move(item));
  }
  return list;
}

std::vector<const LayerRules::Rule*> LayerRules::matching(const std::string& name,
                                                          LayerPosition pos) const {
  std::vector<const Rule*> out;
  for (const Rule& r : rules_)
    if (std::any_of(r.patterns.begin(), r.patterns.end(),
                    [&](const std::string& p) { return layer_pattern_matches(p, name, pos); }))
      out.push_back(&r);
  return out;
}

std::optional<QuantizerSettings> LayerRules::resolve(
    const std::string& name, LayerPosition pos, QuantRole role,
    const std::optional<QuantizerSettings>& base, const QuantizerSettings& family_default) const {
  const std::vector<const Rule*> rules = matching(name, pos);
  if (!ordered_) {
    // Equally specific rules have no order between them: they must agree.
    for (std::size_t i = 0; i < rules.size(); ++i)
      for (std::size_t j = i + 1; j < rules.size(); ++j) {
        const Rule &a = *rules[i], &b = *rules[j];
        const RoleOverride &va = a.role(role), &vb = b.role(role);
        if (!same_rank(a, b) || !va.given || !vb.given) continue;
        const bool conflict =
            va.settings.has_value() != vb.settings.has_value() ||
            (va.settings && quantizer_settings_conflict(*va.settings, *vb.settings));
        if (conflict)
          fail("\"" + a.label + "\" and \"" + b.label + "\" both match layer '" + name +
               "', are equally specific and set its \"" + quant_role_name(role) +
               "\" differently; write \"layers\" as a list of {\"match\": ...} rules, which "
               "apply in order (the last wins)");
      }
  }
  std::optional<QuantizerSettings> cur = base;
  for (const Rule* r : rules) {
    const RoleOverride& o = r->role(role);
    if (!o.given) continue;
    if (!o.settings) {
      cur.reset();
      continue;
    }
    if (!cur) cur = family_default;
    merge_quantizer_settings(*cur, *o.settings);
  }
  return cur;
}

bool LayerRules::operator==(const LayerRules& o) const {
  return std::equal(rules_.begin(), rules_.end(), o.rules_.begin(), o.rules_.end(),
                    [](const Rule& a, const Rule& b) {
                      return a.patterns == b.patterns && a.weight == b.weight && a.input == b.input;
                    });
}

std::vector<std::string> LayerRules::unmatched(
    const std::vector<std::pair<std::string, LayerPosition>>& layers) const {
  std::vector<std::string> out;
  for (const Rule& r : rules_)
    for (const std::string& p : r.patterns)
      if (std::none_of(layers.begin(), layers.end(),
                       [&](const auto& l) { return layer_pattern_matches(p, l.first, l.second); }))
        out.push_back("\"" + p + "\"");
  return out;
}

}  // namespace qgrad::quant
