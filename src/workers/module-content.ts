import type { ContentStore } from "../core/content/store.js";
import type { ModuleRef, ModuleSource } from "./store.js";

/**
 * Module bytes in an area's content store (files, or the bucket in distributed mode), the same for every backend:
 * written before the record naming them commits, removed once no committed record names them.
 */
export class ModuleContent {
  constructor(private readonly content: ContentStore) {}

  async write(content: Buffer): Promise<{ contentId: string; size: number }> {
    const c = await this.content.put(content);
    return { contentId: c.id, size: c.size };
  }

  read(modules: readonly ModuleRef[]): Promise<ModuleSource[]> {
    return Promise.all(modules.map(async (m) => ({ name: m.name, kind: m.kind, content: await this.content.readAll(m.contentId) })));
  }

  async delete(modules: readonly ModuleRef[]): Promise<void> {
    await Promise.all(modules.map((m) => this.content.delete(m.contentId)));
  }

  /** Removes content older than `graceMs` that no record names (`live`, read from the rows just before). */
  gc(live: ReadonlySet<string>, graceMs?: number): Promise<number> {
    return this.content.gc((id) => live.has(id), graceMs);
  }
}
