// Advisory locks on lock files, taken as Python's filelock takes them (flock(LOCK_EX) on the file
// opened O_RDWR | O_CREAT | O_TRUNC, mode 0644), so that huggingface_hub's downloads and ours
// into one cache exclude each other. A lock dies with its process. Pure OS code: no Node-API here.
#pragma once

namespace gguf_mmap {

// Opens (creating) the lock file and tries to lock it without waiting: the descriptor (>= 0)
// holds the lock; -EWOULDBLOCK when someone else holds it; another -errno on failure.
int TryLockFile(const char* path);

// Lets go of the lock and closes the descriptor; 0 or -errno.
int UnlockFile(int fd);

}  // namespace gguf_mmap
