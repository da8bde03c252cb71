/** Redirects are followed by hand (range-client.ts request()), so credentials go to their origin only. */
export const REDIRECTS: 'manual' | 'follow' = 'manual';
