/* The least a Cortex-M4 needs to reach main() under qemu-system-arm: a vector
   table (initial stack, reset), the FPU switched on before any float code
   (the model is built -mfloat-abi=hard), .bss zeroed, and newlib's
   semihosting handles opened, since -nostartfiles leaves out rdimon's crt0. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern uint32_t __bss_start__[], __bss_end__[], __stack_top[];
extern void initialise_monitor_handles(void);
extern int main(void);

void reset_handler(void) {
  *(volatile uint32_t*)0xE000ED88 |= 0xFu << 20; /* CPACR: CP10, CP11 full access */
  __asm volatile("dsb\n isb");
  memset(__bss_start__, 0, (size_t)((char*)__bss_end__ - (char*)__bss_start__));
  initialise_monitor_handles();
  exit(main());
}

static void fault_handler(void) {
  for (;;) {
  }
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))__stack_top, reset_handler, fault_handler, fault_handler,
    fault_handler, fault_handler, fault_handler,
};
