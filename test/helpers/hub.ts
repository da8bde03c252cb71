import { afterAll, beforeAll, beforeEach } from 'vitest';
import { startHubServer, type HubServer } from '../../scripts/hub-imitation.js';

/**
 * The Hub imitation for a test file: started before its tests (HF_ENDPOINT pointing at it),
 * stopped after; before each test its log and faults are cleared and its settings reset.
 */
export function useHubImitation(): { readonly hub: HubServer } {
  const box = {} as { hub: HubServer };
  beforeAll(async () => {
    box.hub = await startHubServer();
    process.env.HF_ENDPOINT = box.hub.endpoint;
  });
  afterAll(async () => {
    delete process.env.HF_ENDPOINT;
    await box.hub.close();
  });
  beforeEach(() => {
    const hub = box.hub;
    hub.log.length = 0;
    hub.faults.hub.length = 0;
    hub.faults.cdn.length = 0;
    hub.faultFor = undefined;
    hub.renamed.clear();
    hub.requireToken = undefined;
    hub.latencyMs = 0;
    hub.trickleMs = 100;
    delete process.env.HF_HUB_OFFLINE;
  });
  return box;
}
