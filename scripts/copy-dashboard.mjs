#!/usr/bin/env node
// Copies the dashboard's static files (src/dashboard/ui) to dist/dashboard-ui, where the server reads them.
import { cpSync, rmSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
rmSync(`${root}dist/dashboard-ui`, { recursive: true, force: true });
cpSync(`${root}src/dashboard/ui`, `${root}dist/dashboard-ui`, { recursive: true });
