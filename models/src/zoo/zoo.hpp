#pragma once
// The zoo's model families; each returns its models' registry entries.
#include <vector>

#include "loom/models/registry.hpp"

namespace loom::models::zoo {

std::vector<ModelInfo> mlp_models();             // mlp, mlp_fig1
std::vector<ModelInfo> resnet_models();          // resnext50, resnet101
std::vector<ModelInfo> inception_models();       // inception_v3
std::vector<ModelInfo> alexnet_models();         // alexnet
std::vector<ModelInfo> transformer_models();     // bert_large, gpt3, mbart
std::vector<ModelInfo> recommendation_models();  // dlrm, xdl
std::vector<ModelInfo> candle_models();          // candle_uno
std::vector<ModelInfo> rnn_models();             // rnntc, rnnlm, nmt
std::vector<ModelInfo> swin_models();            // swin
std::vector<ModelInfo> alphafold_models();       // alphafold2

}  // namespace loom::models::zoo
