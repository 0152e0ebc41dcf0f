{
  "targets": [
    {
      "target_name": "dns_udp_fast",
      "sources": ["udp-fast.cc"],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"],
      "cflags_cc!": ["-fno-exceptions"],
      "libraries": ["-lpthread"]
    }
  ]
}
