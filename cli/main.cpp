// The `qgrad` executable: hands the arguments to the command dispatcher.
#include <iostream>
#include <string>
#include <vector>

#include "cli/command_dispatch.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return qgrad::cli::run_command_line(args, std::cout, std::cerr);
}
