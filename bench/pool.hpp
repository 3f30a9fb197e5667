// Work distribution for `tenet bench`: independent items (benchmark cases, simulations) run on the
// threads of one process or, inside an MPI job (`mpirun -n K tenet bench ...`, `srun --mpi=pmix`),
// on the threads of every process of it.
//
// Rank 0 deals: its own threads take the next item from an in-process counter, and its main
// thread answers the other ranks' requests for work over MPI point-to-point (one message per
// item each way: the finished item's output rides on the request for the next). Items are dealt
// most expensive first (by the caller's estimate), so that long cases do not end up alone at the
// end of the run; outputs come back to rank 0 and are returned in item order, whichever process
// ran them, so a distributed run writes exactly the files of a single process.
//
// MPI is optional at build time (TENET_WITH_MPI: Debian's libopenmpi-dev). It is initialized only
// when a launcher started the process (mpirun's, PMI's or PMIx's environment variables), so a
// plain `tenet bench` never touches it. Started K times without MPI (a build without it, or srun
// without an MPI plugin), rank 0 runs everything and the others exit, with a warning.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace tenet::bench {

// The processes of a run: this one alone, or an MPI world. Not copyable; when it initialized MPI,
// MPI is finalized at exit (after main() has reported any error).
class Processes {
 public:
  Processes();  // initializes MPI when launched by an MPI launcher and built with MPI
  struct Alone {};
  explicit Processes(Alone) {}  // this process only, whatever launched it
  Processes(const Processes&) = delete;
  Processes& operator=(const Processes&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }
  // Threads per process when the user asks for "all cores": this host's cores shared among the
  // run's processes on this host.
  int default_threads() const;
  // Something the user should know about the launch (e.g. started by mpirun, but this tenet was
  // built without MPI); empty when all is well.
  const std::string& warning() const { return warning_; }
  // Whether several threads of a process may talk MPI (one at a time); when the library does not
  // grant it, ranks other than 0 run one thread.
  bool serialized() const { return serialized_; }
  // Collective over the run's processes: each says whether its preparation (flags, the suite
  // file) went well; returns the ranks whose did not, in order (empty: every one's did).
  std::vector<int> failed_ranks(bool ok) const;

 private:
  int rank_ = 0, size_ = 1, local_size_ = 1;
  bool initialized_ = false, serialized_ = true;
  std::string warning_;
};

struct PoolOptions {
  int threads = 0;                       // per process; 0: Processes::default_threads()
  std::function<void(double)> progress;  // on rank 0: the fraction of items done
  std::vector<double> cost;  // estimated cost per item (any unit), or empty: dealt in item order
};

// Who did the work, on rank 0 after run_items: per rank, its threads, the items it ran and the
// seconds they took (the sum over its threads).
struct PoolStats {
  int processes = 1;
  std::vector<int> threads;
  std::vector<size_t> items;
  std::vector<double> busy_seconds;
};

// A run that failed on another rank: rank 0 has reported it; the process should exit non-zero
// without printing anything more.
struct RemoteFailure {};

// Runs run(i) for every item i in [0, count), each once on one thread of one process, and returns
// every output in item order on rank 0 (an empty vector on the other ranks). An exception from
// run(i) stops the dealing; once every thread has finished its item, rank 0 throws tenet::Error
// (for a tenet::Error) or std::runtime_error naming describe(i), and the rank and host when it
// was not rank 0; the other ranks throw RemoteFailure. A crash (SIGSEGV, SIGFPE, SIGABRT, ...)
// inside run(i) prints which item it was running, with rank and host, before the process dies.
std::vector<std::string> run_items(const Processes& procs, size_t count,
                                   const std::function<std::string(size_t)>& run,
                                   const std::function<std::string(size_t)>& describe,
                                   const PoolOptions& options = {}, PoolStats* stats = nullptr);

}  // namespace tenet::bench
