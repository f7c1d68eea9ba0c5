/* For the Wine check only, never shipped: Rust's standard library (1.78 and later) draws random
 * bytes with ProcessPrng from bcryptprimitives.dll, which every Windows 10 and 11 has and Debian's
 * Wine 8 lacks. This stand-in answers from RtlGenRandom (advapi32's SystemFunction036). */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length) {
    while (length > 0) {
        ULONG chunk = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, chunk)) {
            return FALSE;
        }
        data += chunk;
        length -= chunk;
    }
    return TRUE;
}
