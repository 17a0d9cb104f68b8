#include "nazar/nn/lstm_cell.h"

namespace nazar {
namespace lstm {
void gates_forward(TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
void gates_backward(TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, TensorView, TensorView,
                    StepMask) {
    NZ_FAIL("not yet");
}
}  // namespace lstm
LSTMCell::LSTMCell(Config c, Rng&) : cfg(c) { NZ_FAIL("not yet"); }
void LSTMCell::project_input(TensorView, TensorView) const { NZ_FAIL("not yet"); }
void LSTMCell::project_input_backward(TensorView, TensorView, TensorView) { NZ_FAIL("not yet"); }
void LSTMCell::forward_projected(TensorView, TensorView, TensorView, TensorView, TensorView, LSTMStepCache&,
                                 StepMask) const {
    NZ_FAIL("not yet");
}
void LSTMCell::backward_projected(TensorView, TensorView, TensorView, TensorView, const LSTMStepCache&, TensorView,
                                  TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
void LSTMCell::forward(TensorView, TensorView, TensorView, TensorView, TensorView, LSTMStepCache&, StepMask) const {
    NZ_FAIL("not yet");
}
void LSTMCell::backward(TensorView, TensorView, TensorView, TensorView, TensorView, const LSTMStepCache&, TensorView,
                        TensorView, TensorView, StepMask) {
    NZ_FAIL("not yet");
}
}  // namespace nazar
