#include "CSluiceFences.h"

#if defined(__linux__)
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

int sluice_process_barrier_register(void) {
  long commands = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (commands < 0 || !(commands & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return 0;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
}

int sluice_process_barrier(void) {
  return (int)syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0);
}
#else
int sluice_process_barrier_register(void) { return 0; }
int sluice_process_barrier(void) { return -1; }
#endif
