{
  "targets": [
    {
      "target_name": "gguf_mmap",
      "sources": [
        "native/addon.cc", "native/string_walk.cc", "native/tensor_info_walk.cc", "native/os/region.cc", "native/xxh64.cc", "native/hash_napi.cc",
        "native/dequant.cc", "native/dequant_napi.cc", "native/dequant_portable.cc", "native/helper_thread.cc",
        "native/dequant_avx2.cc", "native/dequant_avx512.cc"
      ],
      "include_dirs": ["native", "<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-O3", "-ffp-contract=off"],
      "conditions": [
        ["OS=='linux'", {
          "sources": [
            "native/os/posix/file_map.cc", "native/os/posix/fault_guard.cc", "native/os/posix/page_cache.cc",
            "native/os/posix/file_lock.cc", "native/os/posix/memory.cc", "native/os/posix/host_symbol.cc", "native/os/posix/file_copy.cc", "native/os/posix/cpus.cc", "native/os/linux/glibc_compat.cc"
          ],
          "cflags_cc": ["-ffunction-sections", "-fdata-sections", "-fvisibility=hidden"],
          "ldflags": [
            "-Wl,-z,nodelete",
            "-static-libstdc++", "-Wl,--exclude-libs,ALL", "-Wl,--gc-sections",
            "-Wl,--wrap=pthread_once", "-Wl,--wrap=pthread_create", "-Wl,--wrap=pthread_detach", "-Wl,--wrap=fstat64", "-Wl,--wrap=fstat", "-Wl,--wrap=__libc_single_threaded", "-Wl,--wrap=dlsym",
            "-Wl,--version-script=<(module_root_dir)/native/os/linux/exports.map", "-Wl,--no-as-needed"
          ],
          "libraries": ["-l:libpthread.so.0", "-l:libdl.so.2"]
        }],
        ["OS=='mac'", {
          "sources": [
            "native/os/posix/file_map.cc", "native/os/posix/fault_guard.cc", "native/os/posix/page_cache.cc",
            "native/os/posix/file_lock.cc", "native/os/posix/memory.cc", "native/os/posix/host_symbol.cc", "native/os/posix/file_copy.cc", "native/os/posix/cpus.cc"
          ]
        }],
        ["OS=='win'", {
          "sources": [
            "native/os/windows/file_map.cc", "native/os/windows/fault_guard.cc", "native/os/windows/page_cache.cc",
            "native/os/windows/file_lock.cc", "native/os/windows/memory.cc", "native/os/windows/address_space.cc",
            "native/os/windows/win32.cc", "native/os/windows/host_symbol.cc", "native/os/windows/file_copy.cc", "native/os/windows/cpus.cc"
          ],
          "defines": ["_WIN32_WINNT=0x0A00"],
          "msvs_settings": { "VCCLCompilerTool": { "ExceptionHandling": 1, "AdditionalOptions": ["/std:c++17"] } }
        }]
      ],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      }
    }
  ]
}
