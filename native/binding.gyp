# homefs FUSE binding: an N-API addon over libfuse3's low-level API (see src/hf.h); and homefs_sys, the
# daemon's sd_notify datagram and log-file redirection (src/sys.c); and homefs_files, pull's batched file
# writes and metadata (src/files.c).
{
  "targets": [
    {
      "target_name": "homefs_fuse",
      "sources": ["src/addon.c", "src/slots.c", "src/session.c", "src/dispatch.c", "src/reply.c", "src/wbuf.c", "src/noxattr.c", "src/idlepoll.c", "src/passthrough.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11", "<!@(pkg-config --cflags fuse3)"],
      "libraries": ["<!@(pkg-config --libs fuse3)"],
      "defines": ["FUSE_USE_VERSION=34", "NAPI_VERSION=8"]
    },
    {
      "target_name": "homefs_sys",
      "sources": ["src/sys.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-std=gnu11"],
      "defines": ["NAPI_VERSION=8"]
    },
    {
      "target_name": "homefs_files",
      "sources": ["src/files.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-std=gnu11"],
      "defines": ["NAPI_VERSION=8"]
    }
  ]
}
