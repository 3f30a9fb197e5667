// Mutation tests of the MSCCL-XML import's runtime checks (issue 57): programs Tenet exports (ring,
// rhd, direct, oneshot and synthesized All-Reduce, All-Gather and Reduce-Scatter on a few
// topologies) and programs as msccl-tools writes them, each changed in one place at a time:
//   (a) a reduction's offset: the slot a receive-reduce (rrc, rrcs, rrs) or local reduction (re)
//       reads its own partial sum from, or the slot it writes the sum to;
//   (b) a depid/deps edge dropped that ordered a forwarding send (or a nop before it) after a
//       receive of another thread block;
//   (c) an offset pushed just past its buffer's declared size, or scratch used where s_chunks is 0.
// Each mutant is judged by `tenet verify`'s rule (the import's problems added to the verifier's
// report). A mutant counts as killed only when it is wrong in the runtime: for (b) an independent
// oracle (tests/synth/formats/msccl_runtime_oracle.hpp) says whether the program still runs
// race-free, and a mutant it finds still ordered must be accepted (no false positive). The
// unmutated programs must all verify CORRECT. Counts per class are printed and recorded.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <pugixml.hpp>
#include <sstream>

#include "synth/baselines/baselines.hpp"
#include "synth/formats/msccl_xml.hpp"
#include "synth/synthesizer.hpp"
#include "synth/verify/verify.hpp"
#include "tests/synth/formats/msccl_programs.hpp"
#include "tests/synth/formats/msccl_runtime_oracle.hpp"
#include "topo/generators.hpp"

namespace tenet::synth {
namespace {

using testing::MscclOracle;
using testing::OracleStep;
using testing::runtime_effect;

struct Program {
  std::string name, xml;
  const topo::Topology* t;
};

// Tenet's exports and msccl-tools' programs, on topologies that join every pair they use.
class Corpus {
 public:
  Corpus() {
    for (const char* spec : {"ring:4", "hypercube:8", "fc:4"})
      tops_.push_back(topo::generate(spec));
    for (const char* spec : {"fc:4", "fc:8"}) tools_.push_back(topo::generate(spec));
    for (const topo::Topology& t : tops_) add_exports(t);
    add_tools();
  }
  const std::vector<Program>& programs() const { return programs_; }

 private:
  void add_exports(const topo::Topology& t) {
    for (CollectiveKind kind :
         {CollectiveKind::AllReduce, CollectiveKind::AllGather, CollectiveKind::ReduceScatter}) {
      const Collective c = Collective::over_all(t, kind, 1);
      programs_.push_back({fmt::format("tenet {} on {}", to_string(kind), t.name()),
                           to_msccl_xml(synthesize(t, c, 1 << 20)), &t});
      for (BaselineKind b :
           {BaselineKind::Ring, BaselineKind::Rhd, BaselineKind::Direct, BaselineKind::Oneshot}) {
        if (!supports(b, kind)) continue;
        try {
          programs_.push_back({fmt::format("{} {} on {}", to_string(b), to_string(kind), t.name()),
                               to_msccl_xml(make_baseline({b, {}}, t, c, 1 << 20)), &t});
        } catch (const NotApplicable&) {
        }
      }
    }
  }
  void add_tools() {
    const topo::Topology &fc4 = tools_[0], &fc8 = tools_[1];
    programs_.push_back({"msccl-tools ring all-reduce 4", testing::ring_allreduce(4), &fc4});
    programs_.push_back({"msccl-tools ring all-reduce 8", testing::ring_allreduce(8), &fc8});
    programs_.push_back(
        {"msccl-tools rhd all-reduce 8", testing::recursive_halving_doubling_allreduce(8), &fc8});
    programs_.push_back({"msccl-tools allpairs all-reduce", testing::allpairs_allreduce(4), &fc4});
    programs_.push_back({"msccl-tools one-step all-reduce", testing::one_step_allreduce(4), &fc4});
    programs_.push_back(
        {"msccl-tools hierarchical all-reduce", testing::hierarchical_allreduce(2), &fc4});
    programs_.push_back({"msccl-tools two-step all-to-all", testing::two_step_alltoall(2), &fc4});
    programs_.push_back(
        {"msccl-tools ring all-gather", testing::ring_allgather_in_place(4, 2, "LL"), &fc4});
    programs_.push_back(
        {"msccl-tools rd all-gather", testing::recursive_doubling_allgather(8), &fc8});
  }

  std::vector<topo::Topology> tops_, tools_;
  std::vector<Program> programs_;
};

const Corpus& corpus() {
  static const Corpus c;
  return c;
}

// `tenet verify`'s verdict on a program: the verifier's report with the import's problems.
struct Verdict {
  bool correct = false;
  std::vector<ImportProblem> problems;
  std::string error;  // the import refused the file (not a kill of any class here)
  bool has(ImportProblemKind k) const {
    for (const ImportProblem& p : problems)
      if (p.kind == k) return true;
    return false;
  }
  std::string first() const { return problems.empty() ? error : problems[0].message; }
};

Verdict judge(const std::string& xml, const topo::Topology& t) {
  Verdict v;
  try {
    MscclImport in = import_msccl_xml(xml, t, "mutant.xml");
    Report r = verify(t, in.algorithm, {.max_reported = 1, .lower_bound = false});
    add_import_problems(r, in.problems);
    v.correct = r.correct();
    v.problems = std::move(in.problems);
    if (v.problems.empty() && !r.correct()) v.error = r.violations[0].message;
  } catch (const Error& e) {
    v.error = e.what();
  }
  return v;
}

// The program with its n-th <step> (document order, as MscclOracle::steps lists them) changed.
std::string mutated(const std::string& xml, size_t n,
                    const std::function<void(pugi::xml_node gpu, pugi::xml_node step)>& change) {
  pugi::xml_document doc;
  doc.load_string(xml.c_str(), pugi::parse_default | pugi::parse_comments);
  size_t i = 0;
  for (pugi::xml_node gpu : doc.child("algo").children("gpu"))
    for (pugi::xml_node tb : gpu.children("tb"))
      for (pugi::xml_node st : tb.children("step"))
        if (i++ == n) change(gpu, st);
  std::ostringstream out;
  doc.save(out, "  ", pugi::format_default | pugi::format_no_declaration);
  return out.str();
}

// Every `stride`-th of `n` candidates, so that each program contributes a bounded number.
size_t stride_for(size_t n, size_t most) { return n <= most ? 1 : (n + most - 1) / most; }

const char* size_attr(char buf) {
  return buf == 'i' ? "i_chunks" : buf == 'o' ? "o_chunks" : "s_chunks";
}

struct Tally {
  int generated = 0, killed = 0, equivalent = 0;
  std::map<std::string, int> by;  // what killed them
  std::string line(const std::string& name) const {
    std::string kinds;
    for (const auto& [k, n] : by) kinds += fmt::format(" {} {}", k, n);
    return fmt::format("[mutants] {}: generated {}, killed {}, still correct (not counted) {};{}",
                       name, generated, killed, equivalent, kinds);
  }
};

std::string kind_name(const Verdict& v) {
  static const char* names[] = {"slot-wrong", "reduce-mismatch", "double-count", "unordered",
                                "out-of-bounds"};
  return v.problems.empty() ? "verifier" : names[static_cast<int>(v.problems[0].kind)];
}

void report(const Tally& t, const std::string& name) {
  fmt::print("{}\n", t.line(name));
  ::testing::Test::RecordProperty(name + "_generated", t.generated);
  ::testing::Test::RecordProperty(name + "_killed", t.killed);
}

TEST(MscclMutants, UnmutatedProgramsVerifyCorrect) {
  for (const Program& p : corpus().programs()) {
    const Verdict v = judge(p.xml, *p.t);
    EXPECT_TRUE(v.correct && v.problems.empty()) << p.name << ": " << v.first();
    EXPECT_TRUE(MscclOracle(p.xml).races().empty()) << p.name;
  }
  EXPECT_GE(corpus().programs().size(), 25u);
}

// (a) A reduction's offset moved to another slot of the same buffer.
TEST(MscclMutants, ReductionIntoAnotherSlotIsRejected) {
  Tally tally;
  for (const Program& p : corpus().programs()) {
    const MscclOracle oracle(p.xml);
    for (size_t i = 0; i < oracle.steps().size(); ++i) {
      const OracleStep& x = oracle.steps()[i];
      if (x.type != "rrc" && x.type != "rrcs" && x.type != "rrs" && x.type != "re") continue;
      for (const char* which : {"src", "dst"}) {
        if (std::string(which) == "dst" && x.type == "rrs") continue;  // the runtime never uses it
        bool made = false;
        const std::string xml = mutated(p.xml, i, [&](pugi::xml_node gpu, pugi::xml_node st) {
          const std::string buf = fmt::format("{}buf", which), off = fmt::format("{}off", which);
          const int places =
              gpu.attribute(size_attr(st.attribute(buf.c_str()).value()[0])).as_int() - x.cnt +
              1;  // in-bounds offsets for the cnt slots
          if (places < 2) return;
          st.attribute(off.c_str()) = (st.attribute(off.c_str()).as_int() + 1) % places;
          made = true;
        });
        if (!made) continue;
        ++tally.generated;
        const Verdict v = judge(xml, *p.t);
        EXPECT_FALSE(v.correct) << p.name << ": " << x.type << " " << which << " of gpu " << x.gpu
                                << " tb " << x.tb << " step " << x.s << " moved: accepted";
        EXPECT_TRUE(v.error.empty()) << p.name << ": " << v.error;
        if (v.correct) continue;
        // A mutant rejected for a race alone must race by the oracle's account too.
        if (!v.problems.empty() && v.problems[0].kind == ImportProblemKind::Unordered) {
          EXPECT_FALSE(MscclOracle(xml).races().empty()) << p.name << ": no race";
        }
        ++tally.killed;
        ++tally.by[kind_name(v)];
      }
    }
  }
  report(tally, "reduce-offset");
  EXPECT_GT(tally.generated, 50);
}

// The receives of another thread block that step g reads what they wrote from, and that reach g
// through step `via` (the source of the dependency in question).
std::vector<size_t> forwarded_receives(const MscclOracle& o, size_t g, size_t via) {
  std::vector<size_t> out;
  for (size_t w = 0; w < o.steps().size(); ++w)
    if (runtime_effect(o.steps()[w].type).receives && o.steps()[w].tb != o.steps()[g].tb &&
        o.feeds(w, g) && (w == via || o.ordered(w, via)))
      out.push_back(w);
  return out;
}

// The send a step's dependency guards: the step itself, or after a nop the next real step.
int guarded_step(const MscclOracle& o, size_t t) {
  const OracleStep& x = o.steps()[t];
  if (x.type != "nop") return static_cast<int>(t);
  for (int s = x.s + 1;; ++s) {
    const int next = o.find(x.gpu, x.tb, s);
    if (next < 0 || o.steps()[next].type != "nop") return next;
  }
}

// (b) A depid/deps edge that orders a forwarding send after a receive of another thread block.
TEST(MscclMutants, DroppedDependencyOfAForwardingSendIsRejected) {
  Tally tally;
  int sole = 0;
  for (const Program& p : corpus().programs()) {
    const MscclOracle oracle(p.xml);
    std::vector<std::pair<size_t, std::vector<size_t>>> edges;  // (step, the receives it orders)
    for (size_t t = 0; t < oracle.steps().size(); ++t) {
      const OracleStep& x = oracle.steps()[t];
      const int g = guarded_step(oracle, t), via = oracle.find(x.gpu, x.depid, x.deps);
      if (x.depid < 0 || x.depid == x.tb || g < 0 || via < 0) continue;
      if (!runtime_effect(oracle.steps()[g].type).sends) continue;
      std::vector<size_t> received = forwarded_receives(oracle, g, via);
      if (!received.empty()) edges.emplace_back(t, std::move(received));
    }
    const size_t stride = stride_for(edges.size(), 40);
    for (size_t e = 0; e < edges.size(); e += stride) {
      const auto& [t, received] = edges[e];
      const std::string xml = mutated(p.xml, t, [](pugi::xml_node, pugi::xml_node st) {
        st.attribute("depid") = -1;
        st.attribute("deps") = -1;
      });
      ++tally.generated;
      const MscclOracle after(xml);
      const int g = guarded_step(oracle, t);
      bool unordered = false;
      for (size_t w : received) unordered = unordered || !after.ordered(w, g);
      const bool racy = !after.races().empty();
      const Verdict v = judge(xml, *p.t);
      const OracleStep& x = oracle.steps()[t];
      const std::string what = fmt::format("{}: gpu {} tb {} step {} without depid {} deps {}",
                                           p.name, x.gpu, x.tb, x.s, x.depid, x.deps);
      if (!racy) {  // still ordered some other way: the program is still correct
        ++tally.equivalent;
        EXPECT_TRUE(v.correct) << what << ": " << v.first();
        continue;
      }
      bool named = false;  // the problem names a step of the mutated GPU
      for (const ImportProblem& q : v.problems)
        named = named || (q.kind == ImportProblemKind::Unordered && q.rank == x.gpu);
      EXPECT_TRUE(named) << what << ": " << v.first();
      if (!named) continue;
      ++tally.killed;
      sole += unordered;
      ++tally.by[unordered ? "the edge was the only order" : "another race"];
    }
  }
  report(tally, "dropped-dependency");
  ::testing::Test::RecordProperty("dropped-dependency_sole", sole);
  EXPECT_GT(sole, 30);
}

// (c) An offset just past its buffer, or a scratch slot where the GPU declares none.
TEST(MscclMutants, AccessPastABufferIsRejected) {
  Tally tally;
  for (const Program& p : corpus().programs()) {
    const MscclOracle oracle(p.xml);
    const size_t stride = stride_for(oracle.steps().size(), 30);
    for (size_t i = 0; i < oracle.steps().size(); i += stride) {
      const OracleStep& x = oracle.steps()[i];
      const testing::RuntimeEffect e = runtime_effect(x.type);
      for (const char* which : {"src", "dst"}) {
        const bool used = std::string(which) == "src" ? e.reads_src : e.reads_dst || e.writes_dst;
        if (!used) continue;
        for (bool scratch : {false, true}) {
          bool made = false;
          const std::string xml = mutated(p.xml, i, [&](pugi::xml_node gpu, pugi::xml_node st) {
            const std::string buf = fmt::format("{}buf", which), off = fmt::format("{}off", which);
            if (scratch && gpu.attribute("s_chunks").as_int() > 0) return;
            if (scratch) st.attribute(buf.c_str()) = "s";
            st.attribute(off.c_str()) =
                scratch ? 0
                        : gpu.attribute(size_attr(st.attribute(buf.c_str()).value()[0])).as_int();
            made = true;
          });
          if (!made) continue;
          ++tally.generated;
          const Verdict v = judge(xml, *p.t);
          EXPECT_TRUE(v.has(ImportProblemKind::OutOfBounds))
              << p.name << ": gpu " << x.gpu << " tb " << x.tb << " step " << x.s << " " << which
              << (scratch ? " in scratch" : " past its buffer") << ": " << v.first();
          if (!v.has(ImportProblemKind::OutOfBounds)) continue;
          ++tally.killed;
          ++tally.by[scratch ? "scratch with s_chunks 0" : "offset = buffer size"];
        }
      }
    }
  }
  report(tally, "out-of-bounds");
  EXPECT_GT(tally.generated, 100);
}

// The step of `o` on gpu g of type `type`, the n-th such (document order).
size_t nth_step(const MscclOracle& o, int g, const std::string& type, int n = 0) {
  for (size_t i = 0; i < o.steps().size(); ++i)
    if (o.steps()[i].gpu == g && o.steps()[i].type == type && n-- == 0) return i;
  ADD_FAILURE() << "no " << type << " step on gpu " << g;
  return 0;
}

std::string with_offset(const std::string& xml, size_t step, const char* attr, int value) {
  return mutated(xml, step, [&](pugi::xml_node, pugi::xml_node st) { st.attribute(attr) = value; });
}

// msccl-tools' own ring and recursive halving-doubling All-Reduce (examples/mscclang/
// allreduce_a100_ring.py lines 19-33, allreduce_recursive_doubling_halving.py lines 11-28), each
// with one offset changed, as an outside check found them accepted.
TEST(MscclMutants, MscclToolsAllReducesWithOneOffsetChanged) {
  const auto fc4 = topo::generate("fc:4");
  const std::string ring = testing::ring_allreduce(4);
  const MscclOracle o(ring);
  ASSERT_TRUE(judge(ring, fc4).correct);
  // GPU 1 completes chunk 2 with an rrcs: the sum written to i[3] instead leaves i[2] partial.
  const Verdict sum_elsewhere = judge(with_offset(ring, nth_step(o, 1, "rrcs"), "dstoff", 3), fc4);
  EXPECT_FALSE(sum_elsewhere.correct);
  ASSERT_FALSE(sum_elsewhere.problems.empty());
  EXPECT_EQ(sum_elsewhere.problems[0].message,
            "gpu 1: i[2] ends holding chunk 2 summed over ranks {1}, missing ranks {0,2-3}");
  // GPU 1's first rrs adds chunk 0 (from GPU 0) to its own i[1]: another chunk.
  const Verdict wrong_chunk = judge(with_offset(ring, nth_step(o, 1, "rrs"), "srcoff", 1), fc4);
  ASSERT_TRUE(wrong_chunk.has(ImportProblemKind::ReduceMismatch)) << wrong_chunk.first();
  EXPECT_EQ(wrong_chunk.problems[0].rank, 1);
  EXPECT_EQ(wrong_chunk.problems[0].block, 0);
  EXPECT_EQ(wrong_chunk.problems[0].step, 1);
  // An rrs never reads or writes its dstoff (recvReduceSend(srcOffset)): changing it changes
  // nothing the runtime does.
  EXPECT_TRUE(judge(with_offset(ring, nth_step(o, 1, "rrs"), "dstoff", 3), fc4).correct);

  const auto fc8 = topo::generate("fc:8");
  const std::string rhd = testing::recursive_halving_doubling_allreduce(8);
  const MscclOracle h(rhd);
  ASSERT_TRUE(judge(rhd, fc8).correct);
  // GPU 0's last reduction (chunk 0, from GPU 1; its first thread block) written to i[1]: chunk 0
  // stays partial there.
  const Verdict moved = judge(with_offset(rhd, nth_step(h, 0, "rrc", 0), "dstoff", 1), fc8);
  EXPECT_FALSE(moved.correct);
  EXPECT_TRUE(moved.has(ImportProblemKind::SlotWrong)) << moved.first();
  // Its first reduction (chunks 0-3, from GPU 4; its third thread block) reading i[1..4]: other
  // chunks.
  const Verdict shifted = judge(with_offset(rhd, nth_step(h, 0, "rrc", 2), "srcoff", 1), fc8);
  EXPECT_TRUE(shifted.has(ImportProblemKind::ReduceMismatch)) << shifted.first();
}

// Writing o[9] where o_chunks is 4, and scratch where s_chunks is 0, name the step and buffer.
TEST(MscclMutants, OutOfBoundsNamesTheStepAndBuffer) {
  const auto t = topo::generate("fc:4");
  const std::string ag = testing::ring_allgather_in_place(4, 1, "Simple");
  const MscclOracle o(ag);
  const Verdict past = judge(with_offset(ag, nth_step(o, 1, "rcs"), "dstoff", 9), t);
  ASSERT_TRUE(past.has(ImportProblemKind::OutOfBounds)) << past.first();
  EXPECT_EQ(past.problems[0].rank, 1);
  EXPECT_EQ(past.problems[0].block, 0);
  EXPECT_EQ(past.problems[0].step, 1);
  EXPECT_NE(past.problems[0].message.find(
                "gpu 1 tb 0 step 1 writes o[9], outside its buffer: gpu 1 declares o_chunks=4"),
            std::string::npos)
      << past.problems[0].message;
  const Verdict scratch =
      judge(mutated(ag, nth_step(o, 2, "s"),
                    [](pugi::xml_node, pugi::xml_node st) { st.attribute("srcbuf") = "s"; }),
            t);
  ASSERT_TRUE(scratch.has(ImportProblemKind::OutOfBounds)) << scratch.first();
  EXPECT_NE(scratch.problems[0].message.find("declares s_chunks=0"), std::string::npos);
}

}  // namespace
}  // namespace tenet::synth
