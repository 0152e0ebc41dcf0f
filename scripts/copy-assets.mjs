#!/usr/bin/env node
// Copies the data files the server reads at run time into dist/, beside the compiled code:
// the dashboard's static files (src/dashboard/ui and uPlot -> dist/dashboard-ui) and the AI gateway's model price table
// (src/ai-gateway/metering/prices.json -> dist/ai-gateway/metering/prices.json).
import { copyFileSync, cpSync, mkdirSync, rmSync } from "node:fs";

const root = new URL("..", import.meta.url).pathname;
rmSync(`${root}dist/dashboard-ui`, { recursive: true, force: true });
cpSync(`${root}src/dashboard/ui`, `${root}dist/dashboard-ui`, { recursive: true });
// The dashboard's chart library (uPlot), served beside the page's own scripts (the CSP allows only 'self').
for (const file of ["uPlot.esm.js", "uPlot.min.css"]) copyFileSync(`${root}node_modules/uplot/dist/${file}`, `${root}dist/dashboard-ui/${file}`);
mkdirSync(`${root}dist/ai-gateway/metering`, { recursive: true });
copyFileSync(`${root}src/ai-gateway/metering/prices.json`, `${root}dist/ai-gateway/metering/prices.json`);
