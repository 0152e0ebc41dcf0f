{
  "targets": [
    {
      "target_name": "edge_fd",
      "conditions": [
        ["OS=='linux'", { "sources": ["fd.cc"] }]
      ],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"]
    }
  ]
}
