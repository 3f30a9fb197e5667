#include "cli/suggest_args.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "topo/suggest.hpp"

namespace tenet::cli {
namespace {

// "--coll", "-c", ... of one command (its own flags and help).
std::vector<std::string> flag_names(const CLI::App& app) {
  std::vector<std::string> out;
  for (const CLI::Option* o : app.get_options()) {
    for (const std::string& l : o->get_lnames()) out.push_back("--" + l);
    for (const std::string& s : o->get_snames()) out.push_back("-" + s);
  }
  return out;
}

std::string command_path(const CLI::App* app) {
  std::vector<std::string> names;
  for (; app; app = app->get_parent()) names.insert(names.begin(), app->get_name());
  return fmt::format("{}", fmt::join(names, " "));
}

}  // namespace

std::vector<std::string> argument_hints(const CLI::App& app, int argc, const char* const* argv) {
  std::vector<std::string> hints;
  const CLI::App* current = &app;
  bool positional_seen = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--") break;
    if (arg.size() > 1 && arg[0] == '-' &&
        !(arg.size() > 1 && std::isdigit(static_cast<unsigned char>(arg[1])))) {
      const size_t eq = arg.find('=');
      const bool is_long = arg.rfind("--", 0) == 0;
      const std::string name = is_long ? arg.substr(0, eq) : arg.substr(0, 2);
      // A cluster of short flags (-kauto, -v) names its first letter.
      const std::string lookup = is_long ? name.substr(2) : name.substr(1, 1);
      const CLI::Option* o = nullptr;
      for (const CLI::App* a = current; a && !o;
           a = a->get_parent())  // fallthrough options live on parents
        o = a->get_option_no_throw(is_long ? "--" + lookup : "-" + lookup);
      if (!o) {
        const std::string verb = command_path(current);
        hints.push_back(fmt::format("unknown option '{}' of `{}`{}; `{} --help` lists its options",
                                    name, verb, did_you_mean(name, flag_names(*current)), verb));
        continue;
      }
      // Skip the value of an option that takes one, unless attached (--size=1MiB, -k4).
      const bool attached = is_long ? eq != std::string::npos : arg.size() > 2;
      if (o->get_type_size_max() > 0 && o->get_expected_max() > 0 && !attached) ++i;
      continue;
    }
    bool found = false;
    for (const CLI::App* sub : current->get_subcommands([](const CLI::App*) { return true; }))
      if (sub->check_name(arg)) {
        current = sub;
        positional_seen = false;
        found = true;
        break;
      }
    if (found) continue;
    if (!positional_seen && current->get_require_subcommand_min() > 0) {
      std::vector<std::string> verbs;
      for (const CLI::App* sub : current->get_subcommands([](const CLI::App*) { return true; }))
        verbs.push_back(sub->get_name());
      hints.push_back(fmt::format("unknown command '{}'{} (`{}` has: {})", arg,
                                  did_you_mean(arg, verbs), command_path(current),
                                  fmt::join(verbs, ", ")));
      break;  // what follows belongs to a command we do not know
    }
    positional_seen = true;
  }
  return hints;
}

}  // namespace tenet::cli
