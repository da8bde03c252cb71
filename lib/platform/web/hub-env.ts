// A page has no environment variables and no token file: the Hub is huggingface.co, and a token
// is what the caller passes ({ token }).

export function hubEndpointSetting(): string | undefined {
  return undefined;
}

export function storedHubToken(): { token: string; from: string } | undefined {
  return undefined;
}

export function hfHome(): never {
  throw new TypeError('a web page has no Hugging Face cache');
}
