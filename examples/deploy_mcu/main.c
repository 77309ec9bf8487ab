/* Runs a model compiled by `ember-compile model.onnx --target "c -mcpu=cortex-m4"`
   on an MPS2-AN386 (Cortex-M4) under qemu-system-arm and prints its first
   output through semihosting, one value a line. The input comes from input.h
   (`ember_input`, written by the Makefile from INPUT=x.npy), zeros without it. */
#include <stdio.h>

#include "model.h"

#ifdef EMBER_HAVE_INPUT
#include "input.h"
#endif

int main(void) {
  static float x[EMBER_MODEL_INPUT_X_SIZE], y[EMBER_MODEL_OUTPUT_Y_SIZE];
#ifdef EMBER_HAVE_INPUT
  for (unsigned i = 0; i < sizeof x / sizeof x[0]; ++i) x[i] = ember_input[i];
#endif
  int32_t rc = ember_model_run(x, y);
  printf("ember_model_run: %ld\n", (long)rc);
  for (unsigned i = 0; i < sizeof y / sizeof y[0]; ++i) printf("%.9g\n", (double)y[i]);
  return (int)rc;
}
