// Chat-template oracle: renders cases with @huggingface/jinja (Hugging Face's JavaScript Jinja,
// configured like transformers: trim_blocks, lstrip_blocks).
//
// usage: node template_oracle.mjs JOB.json OUT.json
//   JOB.json: {"templates": {name: text}, "cases": [{"id": ..., "template": name, "vars": {...}}]}
//   OUT.json: [{"id": ..., "ok": true, "out": "..."} | {"id": ..., "ok": false, "error": "..."}]
import { readFileSync, writeFileSync } from "node:fs";
import { Template } from "@huggingface/jinja";

const [jobPath, outPath] = process.argv.slice(2);
if (!jobPath || !outPath) {
  console.error("usage: node template_oracle.mjs JOB.json OUT.json");
  process.exit(2);
}
const job = JSON.parse(readFileSync(jobPath, "utf8"));
const compiled = new Map();
const results = [];
for (const c of job.cases) {
  let t = compiled.get(c.template);
  try {
    if (!t) {
      t = new Template(job.templates[c.template]);
      compiled.set(c.template, t);
    }
    results.push({ id: c.id, ok: true, out: t.render(c.vars) });
  } catch (e) {
    results.push({ id: c.id, ok: false, error: String(e && e.message ? e.message : e) });
  }
}
writeFileSync(outPath, JSON.stringify(results));
