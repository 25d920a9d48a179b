// The check that keeps docs/tutorial.md from rotting: every ```cpp block of the tutorial must be
// preceded by a line `<!-- snippet: PATH#NAME -->` and be, line for line, the region of the
// example file PATH (relative to the source root) between the marker lines `// [tutorial:NAME]`
// and `// [/tutorial:NAME]`, with the region's common indentation removed (the examples' code
// sits inside main(); the doc shows it flush left). Every marked region of examples/tutorial/
// must be quoted by the doc at least once, so no example code claims to be in the tutorial when
// it is not. Usage: tutorial_doc_snippets DOC.md SOURCE_ROOT; it prints each problem with the
// doc's line number and exits with status 1 when there is any (2 for bad arguments). ctest runs
// it on the real doc and, to show that it can fail, on a copy with one snippet line edited.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const std::string kOpen = "// [tutorial:", kClose = "// [/tutorial:";

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

bool read_lines(const fs::path& path, std::vector<std::string>& lines) {
  std::ifstream in(path);
  if (!in) return false;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return true;
}

// The marked regions of one file: name -> lines (dedented). Malformed markers are problems.
std::map<std::string, std::vector<std::string>> regions_of(const fs::path& path,
                                                           std::vector<std::string>& problems) {
  std::map<std::string, std::vector<std::string>> regions;
  std::vector<std::string> lines;
  if (!read_lines(path, lines)) {
    problems.push_back("cannot read " + path.string());
    return regions;
  }
  std::string open;  // the region being read
  std::vector<std::string> body;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string t = trim(lines[i]);
    const std::string where = path.string() + ":" + std::to_string(i + 1) + ": ";
    const bool is_open = t.rfind(kOpen, 0) == 0 && t.back() == ']';
    const bool is_close = t.rfind(kClose, 0) == 0 && t.back() == ']';
    if (is_open) {
      if (!open.empty()) problems.push_back(where + "region '" + open + "' is not closed");
      open = t.substr(kOpen.size(), t.size() - kOpen.size() - 1);
      body.clear();
      if (regions.count(open)) problems.push_back(where + "region '" + open + "' is marked twice");
    } else if (is_close) {
      const std::string name = t.substr(kClose.size(), t.size() - kClose.size() - 1);
      if (name != open) {
        problems.push_back(where + "closing '" + name + "' but the open region is '" + open + "'");
      } else {
        std::size_t indent = std::string::npos;
        for (const std::string& l : body)
          if (!trim(l).empty()) indent = std::min(indent, l.find_first_not_of(' '));
        for (std::string& l : body) l = trim(l).empty() ? "" : l.substr(indent);
        regions[open] = body;
      }
      open.clear();
    } else if (!open.empty()) {
      body.push_back(lines[i]);
    }
  }
  if (!open.empty()) problems.push_back(path.string() + ": region '" + open + "' is not closed");
  return regions;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DOC.md SOURCE_ROOT\n", argv[0]);
    return 2;
  }
  const fs::path doc = argv[1], root = argv[2];
  std::vector<std::string> problems, doc_lines;
  if (!read_lines(doc, doc_lines)) {
    std::fprintf(stderr, "cannot read %s\n", doc.string().c_str());
    return 2;
  }

  // Every marked region of the tutorial's examples, keyed "PATH#NAME".
  std::map<std::string, std::vector<std::string>> regions;
  for (const auto& entry : fs::directory_iterator(root / "examples" / "tutorial")) {
    const std::string ext = entry.path().extension().string();
    if (ext != ".cpp" && ext != ".h") continue;
    const std::string rel = fs::relative(entry.path(), root).generic_string();
    for (auto& [name, body] : regions_of(entry.path(), problems)) regions[rel + "#" + name] = body;
  }

  const std::string tag = "<!-- snippet: ", tag_end = " -->";
  std::set<std::string> quoted;
  int blocks = 0;
  for (std::size_t i = 0; i < doc_lines.size(); ++i) {
    const std::string& line = doc_lines[i];
    const std::string where = doc.string() + ":" + std::to_string(i + 1) + ": ";
    const bool is_tag = line.rfind(tag, 0) == 0 && line.size() > tag.size() + tag_end.size() &&
                        line.compare(line.size() - tag_end.size(), tag_end.size(), tag_end) == 0;
    if (is_tag && (i + 1 >= doc_lines.size() || doc_lines[i + 1] != "```cpp"))
      problems.push_back(where + "a snippet tag must be followed by a ```cpp line");
    if (line != "```cpp") continue;
    ++blocks;
    std::vector<std::string> block;
    std::size_t j = i + 1;
    for (; j < doc_lines.size() && doc_lines[j] != "```"; ++j) block.push_back(doc_lines[j]);
    const std::string prev = i > 0 ? doc_lines[i - 1] : "";
    if (!(prev.rfind(tag, 0) == 0 && prev.size() > tag.size() + tag_end.size())) {
      problems.push_back(where + "```cpp block without a `<!-- snippet: PATH#NAME -->` line");
    } else {
      const std::string key = prev.substr(tag.size(), prev.size() - tag.size() - tag_end.size());
      quoted.insert(key);
      const auto it = regions.find(key);
      if (it == regions.end()) {
        problems.push_back(where + "no marked region '" + key + "' in examples/tutorial/");
      } else if (it->second != block) {
        std::size_t k = 0;
        while (k < block.size() && k < it->second.size() && block[k] == it->second[k]) ++k;
        problems.push_back(
            where + "the block is not the region '" + key + "': first difference at doc line " +
            std::to_string(i + 2 + k) +
            ":\n    doc:     " + (k < block.size() ? block[k] : "(block ends)") +
            "\n    example: " + (k < it->second.size() ? it->second[k] : "(region ends)"));
      }
    }
    i = j;
  }
  for (const auto& [key, body] : regions)
    if (!quoted.count(key)) problems.push_back("region '" + key + "' is not quoted by the doc");

  for (const std::string& p : problems) std::printf("%s\n", p.c_str());
  std::printf("%d ```cpp blocks, %zu marked regions, %zu problem(s)\n", blocks, regions.size(),
              problems.size());
  return problems.empty() ? 0 : 1;
}
