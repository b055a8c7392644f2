import { h } from 'preact';
import htm from 'htm';

/** Preact's h through tagged templates: components without a JSX compile step. */
export const html = htm.bind(h);
