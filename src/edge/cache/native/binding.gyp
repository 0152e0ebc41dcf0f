{
  "targets": [
    {
      "target_name": "edge_sendfile",
      "conditions": [
        ["OS=='linux'", { "sources": ["sendfile.cc"] }]
      ],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"]
    }
  ]
}
