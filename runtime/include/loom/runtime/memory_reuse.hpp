#pragma once
// Executor steps allocate and free the same large buffers (pieces, gradients, messages) step after
// step. By default glibc hands freed blocks of more than 128 KiB back to the system and trims the
// heap, so the next step pays a page fault for every page it touches again, which costs more than
// the copies themselves. Keeping freed memory in the process makes a step's buffers come from the
// previous step's.
namespace loom::runtime {

// Once per process; later calls do nothing.
void keep_freed_memory();

}  // namespace loom::runtime
