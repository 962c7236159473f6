#pragma once
// The model a plan file was made for, read without the library the plan needs: a model written in
// the spec language (FILE.loom:NAME) brings its file into that library.
#include <string>

namespace loom::search {

// The plan's `model`, or "" when the file cannot be read as a plan (loading it then says why).
std::string model_of_plan(const std::string& plan_path);

}  // namespace loom::search
