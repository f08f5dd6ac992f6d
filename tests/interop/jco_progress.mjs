// The `pve-mcp:guest/progress` import for the component hosted in Node.js
// through jco: a host may forward reports or drop them (see the WIT). This
// one keeps them, so the driver can print how many arrived.
export const reports = [];

export function report(progress, total, message) {
  reports.push({ progress, total, message });
}
