/* ProcessPrng for wine 8, whose bcryptprimitives.dll lacks it and which Node 22's node.exe
   imports (for vitest's workers): random bytes from RtlGenRandom. Built and copied into the wine
   prefix's system32 by scripts/windows-smoke.sh; test tooling only, never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length); /* RtlGenRandom, advapi32 */

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
  while (length > 0) {
    ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
    if (!SystemFunction036(data, chunk)) return FALSE;
    data += chunk;
    length -= chunk;
  }
  return TRUE;
}
