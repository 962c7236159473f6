#pragma once
// MPI's error codes as LoomErrors, for every part of the runtime that calls MPI.

namespace loom::runtime {

// A LoomError "<call> failed: <MPI's text>" for any code but MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace loom::runtime
