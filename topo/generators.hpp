// Topology generators, by API and by spec string:
//   <generator>:<shape>[,key=value...]           e.g. torus2d:8x8,bw=50GB/s,lat=0.5us
//   per-dimension values joined by '/'            e.g. mesh2d:8x5,bw=80GiB/s/35GiB/s
//   ' x ' (spaces around) composes dimensions     e.g. ring:8,bw=300GB/s x switch:4,bw=50GB/s
// A hierarchy of D specs has the product of their NPU counts; NPU ids count the first dimension
// fastest (as ASTRA-sim does), and every line of NPUs along dimension d gets its own copy of the
// d-th generator (its own links and switches).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "topo/topology.hpp"

namespace tenet::topo {

struct GeneratorInfo {
  std::string name;           // "torus2d"
  std::string shape;          // "AxB"
  std::string description;    // one line
  std::string example;        // a spec that works
  std::string keys;           // the keys it accepts beyond bw, lat, router
  std::string defaults = {};  // "bw=50GB/s,lat=0.5us", filled in by generators()
};
const std::vector<GeneratorInfo>& generators();

// One parsed spec (no ' x ').
struct GeneratorSpec {
  std::string generator;
  std::vector<int> shape;
  std::map<std::string, std::string> options;  // raw values
};
GeneratorSpec parse_generator_spec(std::string_view text);

// Builds a topology from a spec string (with or without ' x '). Errors name the spec.
Topology generate(std::string_view spec);

// The structure a spec describes: NPUs per hierarchy level, and the finest grid shape.
struct GeneratedShape {
  std::vector<int> levels, grid;
};

// Adds the NPUs, switches and links of `spec` to `builder`, prefixing node names with `prefix`
// (used by topology files to instantiate groups). Returns the ids of the NPUs added; fills
// `shape` when given.
std::vector<NodeId> generate_into(TopologyBuilder& builder, std::string_view spec,
                                  const std::string& prefix, GeneratedShape* shape = nullptr);

// Whether the string looks like a spec rather than a file name: "name:..." with a known generator.
bool looks_like_spec(std::string_view text);

}  // namespace tenet::topo
