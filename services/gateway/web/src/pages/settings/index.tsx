import { Link } from '../../ui';
import { ApproverDomainsPage } from './ApproverDomains';
import { CallbacksPage } from './Callbacks';
import { EnginesPage } from './Engines';
import { GeneralSettings } from './General';
import { MembersPage } from './Members';

/** The admin's settings, one page each (`/app/settings/<section>`); chat channels live under Integrations. */
export const SETTINGS_SECTIONS = [
  { path: '', label: 'General' },
  { path: 'engines', label: 'Engines' },
  { path: 'callbacks', label: 'Callbacks' },
  { path: 'members', label: 'Members' },
  { path: 'approver-domains', label: 'Approver domains' },
] as const;
export type SettingsSection = (typeof SETTINGS_SECTIONS)[number]['path'];
/** `/app/settings` is General, `/app/settings/engines` Engines…; null for any other path (`/app/settings/me` is everyone's own page). */
export function settingsSectionOf(pathname: string): SettingsSection | null {
  const m = pathname.match(/^\/app\/settings(?:\/([a-z-]+))?\/?$/);
  if (!m) return null;
  return SETTINGS_SECTIONS.find((s) => s.path === (m[1] ?? ''))?.path ?? null;
}

export function SettingsPage({ section }: { section: SettingsSection }) {
  return (
    <section>
      <h1>Settings</h1>
      <nav aria-label="Settings" className="tabs">
        {SETTINGS_SECTIONS.map((s) => (
          <Link key={s.path} to={`/app/settings${s.path ? `/${s.path}` : ''}`} className={s.path === section ? 'active' : ''}>
            {s.label}
          </Link>
        ))}
        <Link to="/app/integrations">Chat channels</Link>
      </nav>
      {section === '' ? <GeneralSettings /> : null}
      {section === 'engines' ? <EnginesPage /> : null}
      {section === 'callbacks' ? <CallbacksPage /> : null}
      {section === 'members' ? <MembersPage /> : null}
      {section === 'approver-domains' ? <ApproverDomainsPage /> : null}
    </section>
  );
}
