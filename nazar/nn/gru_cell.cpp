#include "nazar/nn/gru_cell.h"

namespace nazar {
RNNCellParams make_rnn_cell_params(int, int, int, bool, Rng*) { NZ_FAIL("not yet"); }
namespace gru {
void gates_forward(TensorView, TensorView, TensorView, TensorView, TensorView, StepMask) { NZ_FAIL("not yet"); }
void gates_backward(TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
}  // namespace gru
GRUCell::GRUCell(Config c, Rng&) : cfg(c) { NZ_FAIL("not yet"); }
void GRUCell::project_input(TensorView, TensorView) const { NZ_FAIL("not yet"); }
void GRUCell::project_input_backward(TensorView, TensorView, TensorView) { NZ_FAIL("not yet"); }
void GRUCell::forward_projected(TensorView, TensorView, TensorView, GRUStepCache&, StepMask) const { NZ_FAIL("not yet"); }
void GRUCell::backward_projected(TensorView, TensorView, const GRUStepCache&, TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
void GRUCell::forward(TensorView, TensorView, TensorView, GRUStepCache&, StepMask) const { NZ_FAIL("not yet"); }
void GRUCell::backward(TensorView, TensorView, TensorView, const GRUStepCache&, TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
}  // namespace nazar
