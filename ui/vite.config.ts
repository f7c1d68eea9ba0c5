import { defineConfig } from "vite";

// Tauri serves the built files from ui/dist; the dev server runs on the port tauri.conf.json names.
export default defineConfig({
  clearScreen: false,
  server: { port: 5173, strictPort: true },
  build: { target: "es2021", outDir: "dist", emptyOutDir: true },
  test: { environment: "jsdom", include: ["src/**/*.test.ts"] },
});
