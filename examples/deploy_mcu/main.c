/* Runs a model compiled by `ember-compile model.onnx --target "c -mcpu=cortex-m4"
   -o model.tar` on an MPS2-AN386 (Cortex-M4) under qemu-system-arm, printing
   its first output through semihosting. Input: zeros (replace with yours). */
#include <stdio.h>

#include "model.h"

int main(void) {
  static float x[EMBER_MODEL_INPUT_X_SIZE], y[EMBER_MODEL_OUTPUT_Y_SIZE];
  int32_t rc = ember_model_run(x, y);
  printf("ember_model_run: %ld\n", (long)rc);
  for (unsigned i = 0; i < sizeof y / sizeof y[0]; ++i) printf("y[%u] = %f\n", i, (double)y[i]);
  return (int)rc;
}
