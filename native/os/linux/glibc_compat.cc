// Old-glibc compatibility of the Linux binary: what the addon and the static libstdc++ inside it
// would otherwise take from glibc versions newer than 2.28 (the oldest glibc that runs official
// Node 20+ builds). The link routes each such symbol here (-Wl,--wrap=SYMBOL, binding.gyp and
// CMakeLists.txt); scripts/check-glibc.sh fails the build if any newer version, any GLIBCXX or
// CXXABI, or any __wrap_ symbol left undefined remains.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

// The versions to bind to: the first of each architecture's glibc.
#if defined(__x86_64__)
#define GGUF_MMAP_GLIBC_BASE "GLIBC_2.2.5"
#elif defined(__aarch64__)
#define GGUF_MMAP_GLIBC_BASE "GLIBC_2.17"
#else
#error "glibc_compat.cc: unknown architecture (add its first glibc version)"
#endif

extern "C" {

// pthread_once moved from libpthread into libc in glibc 2.34 with a new version; the old one is
// in libpthread.so.0 before 2.34 and still exported by libc after (the link names libpthread.so.0).
int gguf_mmap_old_pthread_once(pthread_once_t* once, void (*init)(void));
__asm__(".symver gguf_mmap_old_pthread_once, pthread_once@" GGUF_MMAP_GLIBC_BASE);
int __wrap_pthread_once(pthread_once_t* once, void (*init)(void)) { return gguf_mmap_old_pthread_once(once, init); }

// pthread_create and pthread_detach (the helper thread, helper_thread.cc) moved as pthread_once did.
int gguf_mmap_old_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg);
__asm__(".symver gguf_mmap_old_pthread_create, pthread_create@" GGUF_MMAP_GLIBC_BASE);
int __wrap_pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*start)(void*), void* arg) {
  return gguf_mmap_old_pthread_create(thread, attr, start, arg);
}
int gguf_mmap_old_pthread_detach(pthread_t thread);
__asm__(".symver gguf_mmap_old_pthread_detach, pthread_detach@" GGUF_MMAP_GLIBC_BASE);
int __wrap_pthread_detach(pthread_t thread) { return gguf_mmap_old_pthread_detach(thread); }

// dlsym moved from libdl into libc in glibc 2.34 with a new version, as pthread_once did (the
// link names libdl.so.2).
void* gguf_mmap_old_dlsym(void* handle, const char* name);
__asm__(".symver gguf_mmap_old_dlsym, dlsym@" GGUF_MMAP_GLIBC_BASE);
void* __wrap_dlsym(void* handle, const char* name) { return gguf_mmap_old_dlsym(handle, name); }

// fstat and fstat64 became functions of their own in glibc 2.33 (inline wrappers of __fxstat
// before): the system call itself, whose struct is glibc's struct stat64 on x86-64 and arm64.
int __wrap_fstat64(int fd, struct stat64* st) { return static_cast<int>(syscall(SYS_fstat, fd, st)); }
int __wrap_fstat(int fd, struct stat* st) { return static_cast<int>(syscall(SYS_fstat, fd, st)); }

// glibc 2.32's flag that lets libstdc++ skip atomic reference counts in a single-threaded
// process. Always 0 here: the counts stay atomic, which is right in every process.
char __wrap___libc_single_threaded = 0;

}  // extern "C"
