// The part of the DOM's MessageChannel used here (the project compiles with Node's types only).
interface Port {
  onmessage: (() => void) | null;
  postMessage(message: null): void;
  close(): void;
}
const { MessageChannel: Channel } = globalThis as unknown as { MessageChannel: new () => { port1: Port; port2: Port } };

/**
 * Resolves on a later task (a MessageChannel message: a page's events run in between, and unlike
 * nested setTimeout(0) it is not clamped to 4 ms).
 */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => {
    const channel = new Channel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}
