#include "loom/runtime/mpi_transport.hpp"

#include <mpi.h>

#include <string>

#include "loom/pcg/diagnostic.hpp"

namespace loom::runtime {
namespace {

template <class T>
MPI_Datatype datatype() {
  return sizeof(T) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT;
}

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw LoomError(std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

template <class T>
void exchange_with_mpi(std::vector<Outgoing<T>>& sends, std::vector<Incoming<T>>& receives) {
  std::vector<MPI_Request> requests(sends.size() + receives.size());
  std::size_t k = 0;
  for (Incoming<T>& r : receives)
    check(MPI_Irecv(r.into->data(), static_cast<int>(r.into->size()), datatype<T>(), r.from, 0, MPI_COMM_WORLD, &requests[k++]), "MPI_Irecv");
  for (Outgoing<T>& s : sends)
    check(MPI_Isend(s.data.data(), static_cast<int>(s.data.size()), datatype<T>(), s.to, 0, MPI_COMM_WORLD, &requests[k++]), "MPI_Isend");
  check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
}

template <class T>
void sum_with_mpi(std::vector<T>& values) {
  check(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), datatype<T>(), MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
}

}  // namespace

MpiTransport::MpiTransport(int* argc, char*** argv) {
  int started = 0;
  MPI_Initialized(&started);
  if (!started) MPI_Init(argc, argv);
  // Errors come back as codes and become LoomErrors naming the call, instead of aborting silently.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

MpiTransport::~MpiTransport() {
  int finished = 0;
  MPI_Finalized(&finished);
  if (!finished) MPI_Finalize();
}

void MpiTransport::exchange(std::vector<Outgoing<float>>& sends, std::vector<Incoming<float>>& receives) { exchange_with_mpi(sends, receives); }
void MpiTransport::exchange(std::vector<Outgoing<double>>& sends, std::vector<Incoming<double>>& receives) { exchange_with_mpi(sends, receives); }
void MpiTransport::sum(std::vector<float>& values) { sum_with_mpi(values); }
void MpiTransport::sum(std::vector<double>& values) { sum_with_mpi(values); }

}  // namespace loom::runtime
