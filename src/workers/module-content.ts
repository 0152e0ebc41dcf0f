import type { ContentStore } from "../core/content/store.js";
import type { ModuleRef, ModuleSource } from "./store.js";

/**
 * What every WorkersStore does with module bytes, whatever keeps its rows: they live in the area's content store
 * (files, or the bucket in distributed mode), are written before the record naming them commits, and are removed
 * once no committed record names them. The stores extend it.
 */
export class ModuleContent {
  constructor(private readonly content: ContentStore) {}

  async writeModule(content: Buffer): Promise<{ contentId: string; size: number }> {
    const c = await this.content.put(content);
    return { contentId: c.id, size: c.size };
  }

  readModules(modules: readonly ModuleRef[]): Promise<ModuleSource[]> {
    return Promise.all(modules.map(async (m) => ({ name: m.name, kind: m.kind, content: await this.content.readAll(m.contentId) })));
  }

  async deleteModules(modules: readonly ModuleRef[]): Promise<void> {
    await Promise.all(modules.map((m) => this.content.delete(m.contentId)));
  }

  /** Removes content older than `graceMs` that no record names (`live`, read from the rows just before). */
  protected gcModules(live: ReadonlySet<string>, graceMs?: number): Promise<number> {
    return this.content.gc((id) => live.has(id), graceMs);
  }
}
