{
  "targets": [
    {
      "target_name": "edge_os",
      "conditions": [
        ["OS=='linux'", { "sources": ["os.cc"] }]
      ],
      "cflags_cc": ["-std=c++17", "-O2", "-Wall", "-Wextra"]
    }
  ]
}
