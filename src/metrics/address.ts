/** `host:port` as a socket address (an IPv6 host in brackets). */
export function bindAddress(host: string, port: number): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** The URL an operator scrapes for a bind address (a wildcard bind is shown as localhost). */
export function metricsUrl(host: string, port: number): string {
  const shown = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
  return `http://${bindAddress(shown, port)}/metrics`;
}
