/** The web console's static routes. */
export { registerConsoleRoutes } from './console-http.js';
