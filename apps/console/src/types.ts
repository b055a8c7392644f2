/** The API's answers as the console reads them: the shared contracts, as types only (no schema code reaches the page). */
import type { z } from 'zod';
import type * as C from '../../../libs/contracts/src/index.js';

export type NodeSummary = z.infer<typeof C.NodeSummary>;
export type NodeList = z.infer<typeof C.NodeList>;
export type NodeDetail = z.infer<typeof C.NodeDetail>;
export type VersionPage = z.infer<typeof C.VersionPage>;
export type VersionEntry = z.infer<typeof C.VersionEntry>;
export type PublishDetail = z.infer<typeof C.PublishDetail>;
export type PublishList = z.infer<typeof C.PublishList>;
export type LedgerHead = z.infer<typeof C.LedgerHead>;
export type DiffResponse = z.infer<typeof C.DiffResponse>;
export type ReportActivation = z.infer<typeof C.ReportActivation>;
export type CheckpointResponse = z.infer<typeof C.CheckpointResponse>;
export type WitnessesResponse = z.infer<typeof C.WitnessesResponse>;
export type RolloutSummary = z.infer<typeof C.RolloutSummary>;
export type RolloutView = z.infer<typeof C.RolloutView>;
export type RolloutList = z.infer<typeof C.RolloutListResponse>;
export type RolloutStatus = z.infer<typeof C.RolloutStatus>;
export type RolloutAction = z.infer<typeof C.RolloutAction>;
export type RolloutWave = z.infer<typeof C.RolloutWave>;
export type RolloutTimelineEntry = z.infer<typeof C.RolloutTimelineEntry>;
export type WaveCounts = z.infer<typeof C.WaveCounts>;
export type WhoamiResponse = z.infer<typeof C.WhoamiResponse>;
