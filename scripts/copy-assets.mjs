#!/usr/bin/env node
// Copies the data files the server reads at run time into dist/, beside the compiled code:
// the dashboard's static files (src/dashboard/ui -> dist/dashboard-ui) and the AI gateway's model price table
// (src/ai-gateway/providers/prices.json -> dist/ai-gateway/providers/prices.json).
import { copyFileSync, cpSync, mkdirSync, rmSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
rmSync(`${root}dist/dashboard-ui`, { recursive: true, force: true });
cpSync(`${root}src/dashboard/ui`, `${root}dist/dashboard-ui`, { recursive: true });
mkdirSync(`${root}dist/ai-gateway/providers`, { recursive: true });
copyFileSync(`${root}src/ai-gateway/providers/prices.json`, `${root}dist/ai-gateway/providers/prices.json`);
