// What the platform asks of the operating system and the C library that Node has no call for (src/core/os/os.ts).
// - duplicate(fd): dup(2), so that each edge thread listens on a descriptor of its own for the edge port's one socket
//   (a thread that ends closes only its own);
// - trimFreedMemory(): glibc's malloc_trim(0), which hands the memory freed in every arena back to the kernel.
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <node_api.h>
#include <string.h>

static napi_value Throw(napi_env env, const char* what) {
  napi_throw_error(env, nullptr, what);
  return nullptr;
}

// duplicate(fd): a new descriptor (close-on-exec) for the same open socket.
static napi_value Duplicate(napi_env env, napi_callback_info info) {
  size_t argc = 1;
  napi_value argv[1];
  if (napi_get_cb_info(env, info, &argc, argv, nullptr, nullptr) != napi_ok || argc != 1) return Throw(env, "duplicate(fd) takes one descriptor");
  int32_t fd;
  if (napi_get_value_int32(env, argv[0], &fd) != napi_ok || fd < 0) return Throw(env, "duplicate(fd): fd must be a descriptor");
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return Throw(env, strerror(errno));
  napi_value out;
  napi_create_int32(env, copy, &out);
  return out;
}

// trimFreedMemory(): true when some memory went back to the kernel.
static napi_value TrimFreedMemory(napi_env env, napi_callback_info) {
  napi_value out;
  napi_get_boolean(env, malloc_trim(0) == 1, &out);
  return out;
}

static napi_value Init(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
      {"duplicate", nullptr, Duplicate, nullptr, nullptr, nullptr, napi_default, nullptr},
      {"trimFreedMemory", nullptr, TrimFreedMemory, nullptr, nullptr, nullptr, napi_default, nullptr},
  };
  napi_define_properties(env, exports, sizeof(props) / sizeof(props[0]), props);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, Init)
