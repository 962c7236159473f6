#include <gtest/gtest.h>

#include "mpi_world.hpp"

namespace loom::runtime::mpi_test {
namespace {
MpiTransport* the_world = nullptr;
}  // namespace

MpiTransport& world() { return *the_world; }

}  // namespace loom::runtime::mpi_test

int main(int argc, char** argv) {
  loom::runtime::MpiTransport transport(&argc, &argv);
  loom::runtime::mpi_test::the_world = &transport;
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
