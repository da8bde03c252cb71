{
  "targets": [
    {
      "target_name": "gguf_mmap",
      "sources": [
        "native/addon.cc", "native/region.cc", "native/fault_guard.cc", "native/page_cache.cc", "native/file_lock.cc", "native/string_walk.cc",
        "native/dequant.cc", "native/dequant_napi.cc", "native/dequant_portable.cc",
        "native/dequant_avx2.cc", "native/dequant_avx512.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": ["NAPI_VERSION=8", "NAPI_CPP_EXCEPTIONS", "NODE_API_SWALLOW_UNTHROWABLE_EXCEPTIONS"],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-O3", "-ffp-contract=off"],
      "ldflags": ["-Wl,-z,nodelete"],
      "xcode_settings": {
        "GCC_ENABLE_CPP_EXCEPTIONS": "YES",
        "CLANG_CXX_LANGUAGE_STANDARD": "c++17",
        "MACOSX_DEPLOYMENT_TARGET": "11.0"
      }
    }
  ]
}
