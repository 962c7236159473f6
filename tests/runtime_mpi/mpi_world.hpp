#pragma once
// The process of an MPI test binary: its main() (mpi_test_main.cpp) starts MPI once, before the
// tests, and the tests reach the transport here.
#include "loom/runtime/mpi_transport.hpp"

namespace loom::runtime::mpi_test {

MpiTransport& world();

}  // namespace loom::runtime::mpi_test
