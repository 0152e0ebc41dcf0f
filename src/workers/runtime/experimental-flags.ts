/**
 * The compatibility flags workerd marks `$experimental` (src/workerd/io/compatibility-date.capnp): workerd takes them
 * only when run with `--experimental`, they may change or go away in any release, and the hosted platform refuses
 * them. An upload asking for one is refused (the queue dispatcher is the one worker here that needs such a flag,
 * and only a queue consumer's process runs with --experimental: queue-dispatch.ts).
 *
 * workerd's npm package ships no schema to read this list from, so it is kept here: taken from the schema of a
 * workerd release near the pinned one (1.20261012.1), then completed by asking the pinned workerd about every flag
 * name its binary holds (`workerd test` on a worker with that flag, without --experimental). experimental-flags.test.ts
 * checks each against the installed workerd (which must refuse it without --experimental): redo that survey when
 * the pin moves. Only enable flags are experimental: their disable flags are not.
 */
export const EXPERIMENTAL_COMPATIBILITY_FLAGS: ReadonlySet<string> = new Set([
  "allow_insecure_inefficient_logged_eval",
  "auto_inject_python_workers",
  "cache_reload_enabled",
  "connect_pass_through",
  "d1_binding_jsrpc",
  "durable_object_get_existing",
  "durable_object_rename",
  "enable_abortsignal_rpc",
  "enable_ctx_version_metadata",
  "enable_d1_with_sessions_api",
  "enable_nodejs_inspector_local_dev",
  "enable_version_api",
  "enable_web_file_system",
  "experimental",
  "expose_draining_reader",
  "increase_websocket_message_size",
  "js_rpc",
  "kv_direct_binding",
  "memory_cache_delete",
  "precise_timers",
  "python_workers_development",
  "python_workers_durable_objects",
  "replica_routing",
  "rtti_api",
  "service_binding_extra_handlers",
  "spec_compliant_property_attributes",
  "streaming_tail_worker",
  "streams_no_default_auto_allocate_chunk_size",
  "tail_worker_user_spans",
  "typescript_implemented_streams",
  "typescript_strip_types",
  "unsafe_module",
  "unsupported_process_actual_platform",
  "wasm_memory_discard",
  "webgpu",
  "workflows_bindings_rpc",
  "workflows_step_rollback",
]);

/** The first of `flags` that is experimental, with its index; undefined when none is. */
export function firstExperimentalFlag(flags: readonly string[]): { flag: string; index: number } | undefined {
  const index = flags.findIndex((f) => EXPERIMENTAL_COMPATIBILITY_FLAGS.has(f));
  return index < 0 ? undefined : { flag: flags[index]!, index };
}
