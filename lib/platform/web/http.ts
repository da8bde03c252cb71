/** A browser answers 'manual' with an opaque response (no status, no Location): it follows redirects itself. */
export const REDIRECTS: 'manual' | 'follow' = 'follow';
