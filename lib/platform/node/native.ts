export {
  addon,
  addonFix,
  addonUnavailableReason,
  adviseHugePages,
  canMap,
  indexStringsNative,
  mapFile,
  nativeTensorInfoWalk,
  optionalAddon,
  walkStrings,
} from '../../native.js';
